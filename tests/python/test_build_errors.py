"""Building from source (what `pip install <sdist>` runs) says in one line what is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CMAKE = shutil.which("cmake", path="/usr/bin") or shutil.which("cmake")


def configure(build: Path, *defines: str, path: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CXX", "CC")}
    if path:
        env["PATH"] = path
    return subprocess.run(
        [str(CMAKE), "-S", str(ROOT), "-B", str(build), "-DTORCHPORT_BUILD_TESTS=OFF", *defines],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


@pytest.mark.skipif(CMAKE is None, reason="cmake is part of every build machine (tools/setup.sh)")
def test_no_compiler_is_one_clear_line(tmp_path):
    only_cmake = tmp_path / "bin"
    only_cmake.mkdir()
    (only_cmake / "cmake").symlink_to(CMAKE)
    proc = configure(tmp_path / "b", path=str(only_cmake))
    assert proc.returncode != 0
    lines = [line.strip() for line in proc.stderr.splitlines() if "torchport:" in line]
    assert lines == [
        "torchport: building from source needs a C++20 compiler (g++ >= 11 or clang++ >= 14) and none "
        "was found: `apt-get install g++`, or install the prebuilt wheel"
    ]


@pytest.mark.skipif(CMAKE is None, reason="cmake is part of every build machine (tools/setup.sh)")
def test_missing_cli11_is_one_clear_line(tmp_path):
    proc = configure(tmp_path / "b", "-DCMAKE_DISABLE_FIND_PACKAGE_CLI11=TRUE")
    assert proc.returncode != 0
    lines = [line.strip() for line in proc.stderr.splitlines() if "torchport:" in line]
    assert lines == [
        "torchport: building from source needs the CLI11 headers: `apt-get install libcli11-dev` (or "
        "-DCLI11_DIR=<dir with CLI11Config.cmake>); the prebuilt wheel needs nothing"
    ]
