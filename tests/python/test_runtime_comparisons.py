"""What a patch cannot see (issue 33 §3): the script's own `x.device.type == "cuda"` tests. `torchport run`
finds them with the C++ analyzer before the script runs, logs each at its file:line with what it evaluates to
for a tensor on the target, and counts them at start and in the summary."""

from __future__ import annotations

import sys
from pathlib import Path

from runtime_testlib import run_torchport
from torchport._core import core_binary
from torchport.runtime._comparisons import answer

SCRIPT = """\
import torch

device = torch.device("cuda")
model = torch.nn.Linear(4, 2).to(device)
x = torch.randn(3, 4, device=device)
use_amp = x.device.type == "cuda"
print("amp", use_amp)
if next(model.parameters()).device.type != "cuda":
    print("params not on cuda")
with torch.autocast("cuda", enabled=use_amp):
    y = model(x)
print("dtype", y.dtype)
"""


def test_device_type_comparisons_are_logged_with_what_they_evaluate_to(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "helper.py").write_text('def on_gpu(t):\n    return "cuda" == t.device.type\n')
    log = tmp_path / "run.log"
    done = run_torchport(
        ["run", "--target", "cpu", "--log", str(log), str(tmp_path / "train.py")],
        {"TORCHPORT_CORE": core_binary()},
    )
    assert done.returncode == 0, done.stderr
    # what the script saw: its AMP test is False on cpu, its != test True
    assert "amp False" in done.stdout and "params not on cuda" in done.stdout
    first = done.stderr.splitlines()[0]
    assert first.startswith('torchport: 3 comparison(s) of a device type with "cuda" in ')
    lines = [line for line in log.read_text().splitlines() if 'device.type vs "cuda"' in line]
    by_place = {line.split(": [", 1)[0].rsplit("/", 1)[-1]: line for line in lines}
    assert set(by_place) == {"train.py:6", "train.py:8", "helper.py:2"}
    assert "-> False for a tensor or module on cpu" in by_place["train.py:6"]
    assert "-> True for a tensor or module on cpu" in by_place["train.py:8"]
    assert "-> False for a tensor or module on cpu" in by_place["helper.py:2"]  # the literal on the left
    assert all("[mismatch]" in line for line in lines)
    assert by_place["train.py:6"].endswith('| use_amp = x.device.type == "cuda"')
    summary = done.stderr[done.stderr.index("redirected call site(s)") :]
    assert 'train.py:6 device type compared with "cuda" [mismatch]' in summary


def test_without_the_analyzer_the_run_goes_on_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    done = run_torchport(
        ["run", "--target", "cpu", str(tmp_path / "train.py")], {"TORCHPORT_CORE": str(tmp_path / "missing")}
    )
    assert done.returncode == 0 and "amp False" in done.stdout
    assert 'comparisons of a device type with "cuda" not looked for' in done.stderr


def test_the_operator_decides_the_answer() -> None:
    def col(line: str) -> int:
        return line.index('"cuda"') + 1

    for line, want in (
        ('if x.device.type == "cuda":', False),
        ('ok = t.device.type != "cuda"', True),
        ('return "cuda" == t.device.type', False),
        ('return "cuda" != t.device.type', True),
        ('if dev.type is "cuda":', False),
        ('if x.device.type in ("cuda", "xpu"):', False),
        ('if str(x.device).startswith("cuda"):', None),
    ):
        assert answer(line, col(line)) is want, line


def test_the_project_of_a_torchrun_launch_is_the_launched_program_s(tmp_path: Path) -> None:
    from torchport.runtime._comparisons import project_of

    pkg = tmp_path / "proj" / "mypkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text("")
    (tmp_path / "s.py").write_text("")
    sys.path.insert(0, str(tmp_path / "proj"))
    try:
        run = "torch.distributed.run"
        launch = ["--standalone", "--nproc_per_node=2", "-m", "mypkg.train", "--module", "x"]
        assert project_of(None, run, launch) == str(tmp_path / "proj")
        assert project_of(None, run, ["--nproc_per_node", "2", str(tmp_path / "s.py"), "-m"]) == str(tmp_path)
        assert project_of(None, run, ["--no-python", "--nproc_per_node=2", "echo"]) is None
    finally:
        sys.path.remove(str(tmp_path / "proj"))
    # torch itself (site-packages) is no user project: analyzing it would analyze every installed package
    assert project_of(None, "torch.utils.collect_env") is None
    assert project_of(None, run, []) is None
