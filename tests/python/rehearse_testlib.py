"""Shared by the tests of `torchport rehearse`: run the command, read its losses and report."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

import pytest

from torchrun_testlib import run_ranks

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

# The vendor's torch_npu: the pinned wheel (CI downloads it in the step before pytest) and the directory it is
# installed into for the rehearsal only (never the venv).
VENDOR_PIN = json.loads((REPO / "data/vendor/torch_npu_wheels.json").read_text())["wheels"][-1]
VENDOR_WHEEL = REPO / "build/torch_npu_wheels" / VENDOR_PIN["filename"]
VENDOR_DIR = REPO / "build/vendor-torch-npu"
NO_VENDOR_WHEEL = (
    f"{VENDOR_WHEEL} is absent: run tools/check_vendor_npu.py first (CI does, in the step before pytest)"
)


def install_vendor() -> Path:
    """The vendor's torch_npu installed in VENDOR_DIR (tools/gen_vendor_npu_core.py --install), or the test is
    skipped when the wheel is absent. Without --check the tool rewrites data/vendor/torch_npu_core.json: a
    stale table shows as a change there (and test_rehearse_vendor_npu's table test fails)."""
    if not VENDOR_WHEEL.is_file():
        pytest.skip(NO_VENDOR_WHEEL)
    p = subprocess.run(
        [
            sys.executable,
            str(REPO / "tools/gen_vendor_npu_core.py"),
            "--offline",
            "--install",
            str(VENDOR_DIR),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    return VENDOR_DIR


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env(**extra: str) -> dict[str, str]:
    e = dict(os.environ, E2E_NO_COMPILE="1", OMP_NUM_THREADS="1", MASTER_PORT=str(free_port()))
    e.pop("TORCHPORT_REHEARSE_CONFIG", None)
    e.update(extra)
    return {k: v for k, v in e.items() if v != ""}  # "" removes a variable


def rehearse(
    *args: str, cwd: Optional[Path] = None, timeout: int = 180, extra_env: Optional[dict[str, str]] = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchport", "rehearse", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        env=env(**(extra_env or {})),
    )


def run_python(
    script: Path, args: Sequence[str] = (), timeout: int = 180
) -> subprocess.CompletedProcess[str]:
    """Run a script on plain torch (no torchport). A run whose spawned gloo rank aborted in torch's C++
    teardown (TEARDOWN_ABORT; seen in CI in the --target cpu run of ddp_train) is run again (run_ranks)."""
    return run_ranks(
        [sys.executable, str(script), *args],
        cwd=script.parent,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        env=env(),
    )


def losses(stdout: str) -> list[float]:
    return [float(m.group(1)) for m in re.finditer(r"^step \d+ loss (\S+)$", stdout, re.M)]


def read_report(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def rehearsal_built() -> None:
    """Builds the C++ extension once (a no-op when .ci/run or an earlier run already built it)."""
    p = subprocess.run(
        [sys.executable, "-m", "torchport", "rehearse", "--build"],
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    assert p.returncode == 0, p.stderr
