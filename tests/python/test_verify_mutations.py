"""The proof that `torchport verify` can fail: a correct migration of
tests/fixtures/verify/mutable_train.py is broken on purpose, one realistic mistake at a time, and
verify must name the right step and the right layer. Then bad input: clear errors, exit 2.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "verify"
STEPS = "4"


def torchport(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchport", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=dict(os.environ),
        timeout=600,
    )


def verify_json(*args: str) -> tuple[int, dict[str, Any]]:
    p = torchport("verify", *args, "--format", "json")
    assert p.stdout.strip(), p.stderr
    return p.returncode, json.loads(p.stdout)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The original CUDA script and its correct migration for --target cpu."""
    root = tmp_path_factory.mktemp("mut")
    orig = root / "orig"
    orig.mkdir()
    shutil.copy(FIXTURES / "mutable_train.py", orig / "mutable_train.py")
    p = torchport("migrate", str(orig), "-o", str(root / "out"), "--target", "cpu", "-q")
    assert p.returncode == 0, p.stderr
    return orig, root / "out" / "orig_cpu"


def mutate(project: tuple[Path, Path], tmp_path: Path, edits: list[tuple[str, str]]) -> Path:
    orig, good = project
    bad = tmp_path / "orig_cpu"
    shutil.copytree(good, bad)
    path = bad / "mutable_train.py"
    text = path.read_text()
    for old, new in edits:
        assert text.count(old) == 1, old  # the mutation applies exactly where intended
        text = text.replace(old, new)
    path.write_text(text)
    return bad


def test_the_correct_migration_is_identical(project: tuple[Path, Path]) -> None:
    orig, good = project
    code, rep = verify_json(
        str(orig), str(good), "--target", "cpu", "--entry", "mutable_train.py", "--steps", STEPS
    )
    assert (code, rep["verdict"]) == (0, "identical"), rep["reason"]
    assert rep["compare"]["rows"] == rep["compare"]["identical_rows"] > 100


# (edits, first diverging step, first forward layer (None: every layer identical), first backward
# layer, a phrase of the reason)
MUTATIONS: dict[str, tuple[list[tuple[str, str]], int, Any, Any, str]] = {
    "changed dtype in one layer": (
        [
            ("self.fc2 = nn.Linear(32, 32)", "self.fc2 = nn.Linear(32, 32).to(torch.bfloat16)"),
            ("h = self.gate(self.fc2(h))", "h = self.gate(self.fc2(h.to(torch.bfloat16)).float())"),
        ],
        0,
        ("fc2", "in"),
        None,
        "",
    ),
    "dropped model.train()": ([("        model.train()\n", "")], 1, ("drop", "out"), None, "loss"),
    "torch.manual_seed inserted mid-run": (
        [
            (
                "        model.train()\n",
                "        model.train()\n        if step == 2:\n            torch.manual_seed(0)\n",
            )
        ],
        2,
        ("drop", "out"),
        None,
        "loss",
    ),
    "GradScaler for the wrong device": (
        [('torch.amp.GradScaler("cpu")', 'torch.amp.GradScaler("cuda")')],
        0,
        None,
        ("", "in"),
        "the loss scale differs",
    ),
    "numerics change only in backward": (
        [
            (
                "return grad * (x.abs() < 2.0).to(grad.dtype)",
                "return (grad * (x.abs() < 2.0).to(grad.dtype)).to(torch.bfloat16).float()",
            )
        ],
        0,
        None,
        ("gate", "out"),
        "",
    ),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_a_wrong_migration_is_caught_at_the_right_step_and_layer(
    name: str, project: tuple[Path, Path], tmp_path: Path
) -> None:
    edits, step, fwd, bwd, phrase = MUTATIONS[name]
    bad = mutate(project, tmp_path, edits)
    code, rep = verify_json(
        str(project[0]), str(bad), "--target", "cpu", "--entry", "mutable_train.py", "--steps", STEPS
    )
    assert (code, rep["verdict"]) == (1, "diverged"), rep["reason"]
    fd = rep["first_divergence"]
    assert fd["step"] == step, rep["reason"]
    assert phrase in rep["reason"]
    if fwd is None:
        assert fd["forward"] is None, fd["forward"]
        assert "forward: all layers identical" in rep["reason"]
    else:
        assert (fd["forward"]["name"], fd["forward"]["io"]) == fwd, fd["forward"]
        assert fd["forward"]["step"] == step
    if bwd is not None:
        assert (fd["backward"]["name"], fd["backward"]["io"]) == bwd, fd["backward"]
    if name == "changed dtype in one layer":
        check_text_and_html(rep)


def check_text_and_html(rep: dict[str, Any]) -> None:
    """The text and HTML renderings of a diverged report name the same place."""
    from torchport.verify.cli import render_text
    from torchport.verify.html import render

    text = render_text(rep)
    assert text.startswith("verdict: diverged\n")
    assert "  forward   fc2 (Linear) forward call 0 input[0]: relative deviation" in text
    assert "(dtype float32 -> bfloat16, device cpu -> cpu)" in text
    page = render(rep)
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page and "http" not in page.replace("http://www.w3.org/2000/svg", "")
    # the loss chart has one polyline per run with one point per step
    assert page.count("<polyline") == 2
    assert page.count("<circle") == 2 * len(rep["steps"])
    assert "Per-layer deviation at step 0" in page
    assert "fc2 (Linear) forward call 0 input[0]" in page


def test_op_level_names_the_op_and_its_module(project: tuple[Path, Path], tmp_path: Path) -> None:
    edits = MUTATIONS["numerics change only in backward"][0]
    bad = mutate(project, tmp_path, edits)
    code, rep = verify_json(
        str(project[0]),
        str(bad),
        "--target",
        "cpu",
        "--entry",
        "mutable_train.py",
        "--steps",
        "2",
        "--level",
        "op",
    )
    assert (code, rep["verdict"]) == (1, "diverged"), rep["reason"]
    fd = rep["first_divergence"]
    assert fd["step"] == 0
    assert fd["forward"] is None  # every forward op is bit-identical
    # the first backward op that differs is the custom Function's backward: the bfloat16 cast the
    # mutation added, run for ClippedIdentityBackward in module gate
    assert fd["backward"]["module"] == "gate", fd["backward"]
    assert fd["backward"]["name"].startswith("aten."), fd["backward"]


def test_a_different_number_of_steps_cannot_be_compared(project: tuple[Path, Path], tmp_path: Path) -> None:
    bad = mutate(project, tmp_path, [("for step in range(4):", "for step in range(2):")])
    code, rep = verify_json(
        str(project[0]), str(bad), "--target", "cpu", "--entry", "mutable_train.py", "--steps", STEPS
    )
    assert (code, rep["verdict"]) == (2, "could not compare"), rep["reason"]
    assert (
        rep["reason"]
        == "different number of optimizer steps: the original made 4, the migrated 2 (of 4 requested)"
    )


def test_a_buffer_left_on_cuda_is_a_crash_with_its_traceback(
    project: tuple[Path, Path], tmp_path: Path
) -> None:
    # The wrong device for one buffer: on a machine without the device the migrated run crashes
    # where the buffer is made; verify shows that traceback (the device check of the probe records,
    # which sees a buffer on the wrong device without a crash, needs a second device type: rehearse).
    bad = mutate(
        project,
        tmp_path,
        [("torch.linspace(-0.5, 0.5, 32)", 'torch.linspace(-0.5, 0.5, 32, device="cuda")')],
    )
    code, rep = verify_json(
        str(project[0]), str(bad), "--target", "cpu", "--entry", "mutable_train.py", "--steps", STEPS
    )
    assert (code, rep["verdict"]) == (2, "could not compare"), rep["reason"]
    assert "the migrated run failed with exit code 1 after 0 of 4 steps" in rep["reason"]
    assert 'device="cuda"' in rep["traceback"]
    assert "mutable_train.py" in rep["traceback"]


# ---- bad input --------------------------------------------------------------------------------


def test_an_entry_missing_in_one_tree(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "pkg").mkdir(parents=True)
    (b / "pkg").mkdir(parents=True)
    shutil.copy(FIXTURES / "mutable_train.py", a / "train.py")
    (b / "serve.py").write_text("print('hi')\n")
    p = torchport("verify", str(a), str(b), "--target", "cpu")
    assert p.returncode == 2
    assert p.stderr == f"torchport verify: error: {b / 'train.py'}: the entry script is missing in MIGRATED\n"
    p = torchport("verify", str(b), str(a), "--target", "cpu", "--entry", "serve.py")
    assert p.returncode == 2
    assert p.stderr == f"torchport verify: error: {a / 'serve.py'}: the entry script is missing in MIGRATED\n"
    (a / "pkg" / "train.py").write_text("")
    p = torchport("verify", str(a), str(b), "--target", "cpu", "-m", "pkg.train")
    assert p.returncode == 2
    assert p.stderr == f"torchport verify: error: {b}: module pkg.train is missing in MIGRATED\n"


def test_different_projects_are_different_models(tmp_path: Path) -> None:
    # Two trees with an entry of the same name but another model: the probe's model signatures differ.
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    shutil.copy(FIXTURES / "mutable_train.py", a / "train.py")
    other = (HERE.parent / "fixtures" / "e2e_scripts" / "argparse_device.py").read_text()
    (b / "train.py").write_text(other.replace('default="cuda"', 'default="cpu"'))
    code, rep = verify_json(str(a), str(b), "--target", "cpu", "--steps", "2")
    assert code == 2
    assert rep["verdict"] == "could not compare"
    assert rep["reason"] == (
        "different model structure: the original's model is Net with 6 parameters, the migrated Sequential "
        "with 4: parameter fc1.weight [32, 8] is only in the original"
    )


def test_a_tree_migrated_from_another_project_is_refused(project: tuple[Path, Path], tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(FIXTURES / "mutable_train.py", other / "mutable_train.py")
    p = torchport("verify", str(other), str(project[1]), "--target", "cpu", "--entry", "mutable_train.py")
    assert p.returncode == 2
    assert "different projects: MIGRATED was migrated from" in p.stderr


def test_a_script_that_never_calls_backward(tmp_path: Path) -> None:
    script = tmp_path / "inference_only.py"
    shutil.copy(FIXTURES / script.name, script)
    code, rep = verify_json(str(script), "--target", "cpu")
    assert code == 2
    assert rep["verdict"] == "could not compare"
    assert rep["reason"].startswith("the script never called backward()")


def test_a_hanging_run_is_stopped_by_the_timeout(tmp_path: Path) -> None:
    script = tmp_path / "hangs.py"
    shutil.copy(FIXTURES / script.name, script)
    code, rep = verify_json(str(script), "--target", "cpu", "--timeout", "10")
    assert code == 2
    assert rep["verdict"] == "could not compare"
    assert (
        rep["reason"] == "the original run did not finish within --timeout 10 s (it completed 0 of 3 steps)"
    )
    assert rep["original"]["timed_out"] is True
    assert rep["migrated"]["exit_code"] is None  # not started once the original had failed


def test_bad_options(tmp_path: Path) -> None:
    p = torchport("verify", str(tmp_path / "nope.py"), "--target", "cpu")
    assert p.returncode == 2
    assert p.stderr == f"torchport verify: error: {tmp_path / 'nope.py'}: no such file or directory\n"
    p = torchport("verify", str(FIXTURES / "mutable_train.py"), "--target", "cpu", "--tolerance", "loose")
    assert p.returncode == 2
    assert "not a tolerance: 'loose'" in p.stderr
    d = tmp_path / "proj"
    d.mkdir()
    (d / "main.py").write_text("")
    p = torchport("verify", str(d), str(d), "--target", "cpu")
    assert p.returncode == 2
    assert "a directory needs --entry SCRIPT or -m MODULE (no train.py)" in p.stderr
