"""Issue 21's scripts (tests/fixtures/first_hour): CPU-only training scripts are negative controls that every
target leaves byte-identical, and `use_cuda = torch.cuda.is_available()`-style scripts that, migrated to cpu,
run the original's CPU branch and print the same loss as the original on this CPU-only machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "first_hour"
TARGETS = ["npu", "mlu", "musa", "xpu", "mps", "hpu", "cpu", "accelerator"]


def torchport(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("torchport")
    cmd = [str(exe)] if exe.is_file() else [sys.executable, "-m", "torchport"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, check=False, timeout=300)


@pytest.mark.parametrize("target", TARGETS)
def test_cpu_only_scripts_are_left_byte_identical(target: str, tmp_path: Path) -> None:
    src = FIXTURES / "cpu_only"
    p = torchport("migrate", str(src), "-o", str(tmp_path), "-t", target, "-q")
    assert p.returncode == 0, p.stderr
    out = tmp_path / f"cpu_only_{target}"
    scripts = sorted(f.name for f in src.glob("*.py"))
    assert len(scripts) == 4
    for name in scripts:
        assert (out / name).read_bytes() == (src / name).read_bytes(), f"{name} changed for {target}"


def run(script: Path) -> str:
    p = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False, timeout=300
    )
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_cuda_or_cpu_scripts_run_the_cpu_branch_after_migrating_to_cpu(tmp_path: Path) -> None:
    src = FIXTURES / "cuda_or_cpu"
    p = torchport("migrate", str(src), "-o", str(tmp_path), "-t", "cpu", "-q")
    assert p.returncode == 0, p.stderr
    out = tmp_path / "cuda_or_cpu_cpu"
    scripts = sorted(src.glob("*.py"))
    assert len(scripts) == 3
    for script in scripts:
        migrated = (out / script.name).read_text()
        assert "torch.cuda.is_available()" not in migrated and "torch.cpu.is_available()" not in migrated
        original = run(script)  # no CUDA here: the original takes its CPU branch
        assert original.startswith("loss ") or "\nloss " in original, original
        assert run(out / script.name) == original, script.name
