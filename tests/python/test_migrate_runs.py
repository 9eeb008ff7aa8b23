"""End-to-end proof: the example CUDA project fails on this CPU-only machine as it is, and trains
after `torchport migrate --target cpu` and `--target accelerator`; the vendor targets' outputs
equal the hand-judged expected files.

The project is examples/cuda_project (a training script and a model package using .cuda(),
torch.cuda.*, "cuda:0", f"cuda:{rank}", amp GradScaler/autocast, torch.backends.cudnn, nccl
guarded by WORLD_SIZE, a checkpoint reloaded with map_location, and a non-Python file). The
expected outputs are tests/fixtures/cuda_project_expected/<target>/, written by hand.
"""

from __future__ import annotations

import csv
import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchport import report_json

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "cuda_project"
EXPECTED = REPO / "tests" / "fixtures" / "cuda_project_expected"
PY_FILES = ["train.py", "model/net.py", "model/__init__.py"]


def torchport(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("torchport")
    cmd = [str(exe)] if exe.is_file() else [sys.executable, "-m", "torchport"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, check=False)


def train(project: Path, out: Path, steps: int = 3) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "train.py", "--steps", str(steps), "--out", str(out)],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def losses(stdout: str) -> list[float]:
    return [float(m.group(1)) for m in re.finditer(r"^step \d+ loss (\S+)$", stdout, re.M)]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dst = tmp_path_factory.mktemp("src") / "cuda_project"
    shutil.copytree(EXAMPLE, dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


@pytest.fixture(scope="module")
def migrated(project: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Migrates the project once per target; the input must stay byte for byte the same."""
    before = tree_digest(project)
    out = tmp_path_factory.mktemp("out")
    result: dict[str, Path] = {}
    for target in ["cpu", "accelerator", "npu", "mlu", "musa", "xpu"]:
        p = torchport("migrate", str(project), "-o", str(out), "--target", target)
        assert p.returncode == 0, f"--target {target}: {p.stdout}\n{p.stderr}"
        result[target] = out / f"cuda_project_{target}"
        assert result[target].is_dir()
    assert tree_digest(project) == before, "migrate modified its input"
    return result


def test_the_original_fails_on_this_cpu_only_machine(project: Path, tmp_path: Path) -> None:
    p = train(project, tmp_path / "ckpt.pt", steps=1)
    assert p.returncode != 0
    assert "Torch not compiled with CUDA enabled" in p.stderr
    assert "step 0" not in p.stdout


@pytest.fixture(scope="module")
def runs(
    migrated: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[subprocess.CompletedProcess[str], Path]]:
    """Runs the cpu and accelerator outputs once: 3 training steps and a checkpoint reload."""
    out = tmp_path_factory.mktemp("runs")
    return {t: (train(migrated[t], out / f"{t}.pt"), out / f"{t}.pt") for t in ["cpu", "accelerator"]}


@pytest.mark.parametrize("target", ["cpu", "accelerator"])
def test_the_migrated_project_trains(
    runs: dict[str, tuple[subprocess.CompletedProcess[str], Path]], target: str
) -> None:
    p, ckpt = runs[target]
    assert p.returncode == 0, p.stderr
    got = losses(p.stdout)
    assert len(got) == 3, p.stdout
    assert all(0.0 < x < 10.0 for x in got), got
    assert "checkpoint reloaded" in p.stdout
    assert ckpt.is_file()


def test_cpu_and_accelerator_outputs_compute_the_same_losses(
    runs: dict[str, tuple[subprocess.CompletedProcess[str], Path]],
) -> None:
    la, lb = losses(runs["cpu"][0].stdout), losses(runs["accelerator"][0].stdout)
    assert len(la) == 3
    assert la == pytest.approx(lb, rel=1e-6)


@pytest.mark.parametrize("target", ["npu", "mlu", "musa", "xpu", "cpu", "accelerator"])
def test_outputs_equal_the_hand_judged_files(migrated: dict[str, Path], target: str) -> None:
    out = migrated[target]
    for name in PY_FILES:
        want = EXPECTED / target / name
        expected = want.read_text() if want.exists() else (EXAMPLE / name).read_text()
        assert (out / name).read_text() == expected, f"{target}: {name}"
    # The non-Python file is copied unchanged ("cuda" in it stays).
    assert (out / "README.txt").read_bytes() == (EXAMPLE / "README.txt").read_bytes()


def test_what_cannot_be_converted_is_reported(migrated: dict[str, Path]) -> None:
    report = migrated["cpu"] / "torchport-report"
    with (report / "unsupported_api.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["File", "Start Line", "End Line", "OP", "Tips"]
    # cudnn.benchmark (train.py line 39) stays, but has no effect on the CPU: reported.
    assert [r[:4] for r in rows[1:]] == [["train.py", "39", "39", "torch.backends.cudnn.benchmark"]]
    assert "torch.backends.cudnn.benchmark = True" in (migrated["cpu"] / "train.py").read_text()
    # torch.cuda.max_memory_allocated (line 60): the CPU has no allocator to ask; it becomes 0
    # and the change says so, labelled as an unsafe fix (a value replaced by a constant).
    with (report / "change_list.csv").open(newline="") as f:
        changes = [r for r in csv.reader(f) if r[0] == "train.py" and r[1] == "60"]
    assert changes == [
        [
            "train.py",
            "60",
            "60",
            "MODIFY",
            "[unsafe fix: changes behaviour: a value replaced by a constant] change "
            "torch.cuda.max_memory_allocated(...) to 0 (the CPU has no device memory to measure: "
            "a call becomes 0)",
        ]
    ]
    assert "peak = 0 / 2**20" in (migrated["cpu"] / "train.py").read_text()


def test_accelerator_report_states_the_minimum_torch(migrated: dict[str, Path]) -> None:
    data = report_json.load(migrated["accelerator"] / "torchport-report" / "report.json")
    # torch.accelerator.max_memory_allocated needs torch 2.9 (the device variable needs 2.6).
    assert data["min_torch_version"] == "2.9"


def test_migrating_the_output_again_changes_nothing(migrated: dict[str, Path], tmp_path: Path) -> None:
    for target in ["cpu", "accelerator", "npu"]:
        src = tmp_path / f"again_{target}"
        shutil.copytree(
            migrated[target], src, ignore=shutil.ignore_patterns("torchport-report", "__pycache__")
        )
        p = torchport("migrate", str(src), "-o", str(tmp_path / f"out_{target}"), "--target", target)
        assert p.returncode == 0, p.stderr
        again = tmp_path / f"out_{target}" / f"again_{target}_{target}"
        for name in PY_FILES:
            assert (again / name).read_text() == (src / name).read_text(), f"{target}: {name}"


def test_accelerator_device_runs_without_an_accelerator(tmp_path: Path) -> None:
    """`torch.device("cuda")` on --target accelerator: torch.accelerator.current_accelerator() is None on a
    machine without an accelerator (this one), so outside a branch that chose the accelerator the device
    falls back to the CPU. The original of this script needs CUDA; the migrated one runs here and every
    device it prints is the CPU (an AttributeError on None before the fix)."""
    src = REPO / "tests" / "fixtures" / "rules" / "device_call_fallback"
    r = torchport("migrate", str(src), "-o", str(tmp_path), "--target", "accelerator")
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "device_call_fallback_accelerator"
    run = subprocess.run(
        [sys.executable, "input.py"], cwd=out, capture_output=True, text=True, check=False, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["cpu", "cpu", "cpu", "cpu", "cpu", "cpu"]
