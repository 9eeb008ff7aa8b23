"""tools/setup.sh installs the corpus projects' dependencies into build/corpus-deps without pip's
dependency-resolver "ERROR" lines: they conflict with .venv's packages on purpose (issue 35 §5)."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SETUP = REPO / "tools" / "setup.sh"


def target_installs() -> list[str]:
    """The pip_install commands of setup.sh that write into a --target directory (continued lines joined)."""
    text = SETUP.read_text().replace("\\\n", " ")
    return [
        ln.strip() for ln in text.splitlines() if ln.strip().startswith("pip_install") and "--target" in ln
    ]


def test_the_corpus_installs_turn_off_the_resolver_report() -> None:
    installs = target_installs()
    assert len(installs) == 2, installs
    assert all("--no-warn-conflicts" in cmd for cmd in installs), installs
    assert "on purpose" in SETUP.read_text()  # and the script says why, in its output too


def old_setuptools_wheel(where: Path) -> Path:
    """A wheel of setuptools 1.0 (nothing in it): older than the setuptools torch requires."""
    wheel = where / "setuptools-1.0-py3-none-any.whl"
    info = "setuptools-1.0.dist-info"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("setuptools/__init__.py", "")
        z.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: setuptools\nVersion: 1.0\n")
        z.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        z.writestr(f"{info}/RECORD", "")
    return wheel


def test_a_target_install_that_conflicts_with_the_environment_prints_no_error(tmp_path: Path) -> None:
    # What setup.sh meets: a package of .venv (torch) requires a newer version than the target gets.
    needs = [r for r in metadata.requires("torch") or [] if re.match(r"setuptools\b", r)]
    if not needs:
        pytest.skip("this torch does not require setuptools: no conflict to provoke")
    wheel = old_setuptools_wheel(tmp_path)
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--disable-pip-version-check"]
    plain = subprocess.run(
        [*pip, "--target", str(tmp_path / "a"), str(wheel)], capture_output=True, text=True
    )
    assert plain.returncode == 0, plain.stderr
    assert "ERROR: pip's dependency resolver" in plain.stderr  # the lines the CI log showed
    quiet = subprocess.run(
        [*pip, "--no-warn-conflicts", "--target", str(tmp_path / "b"), str(wheel)],
        capture_output=True,
        text=True,
    )
    assert quiet.returncode == 0, quiet.stderr
    assert "ERROR" not in quiet.stderr
    assert (tmp_path / "b" / "setuptools-1.0.dist-info").is_dir()
