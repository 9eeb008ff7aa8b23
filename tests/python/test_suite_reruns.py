"""The suite's rerun rule (conftest.py): a test is run again only when its failure carries the teardown
abort's message, and a test that keeps failing still fails.
Checked in an inner pytest run on three small tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

INNER_CONFTEST = f"""
import sys
sys.path.insert(0, {str(HERE)!r})
from torchrun_testlib import mark_teardown_reruns

def pytest_collection_modifyitems(items):
    mark_teardown_reruns(items)
"""

INNER_TESTS = """
from pathlib import Path
from torchrun_testlib import TEARDOWN_ABORT

def _count(name):
    p = Path(__file__).with_name(name)
    n = int(p.read_text()) + 1 if p.exists() else 1
    p.write_text(str(n))
    return n

def test_aborts_once_then_passes():
    assert _count("once") > 1, "rank 1 said: " + TEARDOWN_ABORT

def test_aborts_every_time():
    _count("always")
    assert False, TEARDOWN_ABORT

def test_fails_otherwise():
    _count("other")
    assert False, "a real failure"
"""


def test_only_the_teardown_abort_is_run_again_and_a_lasting_one_still_fails(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(INNER_CONFTEST)
    (tmp_path / "test_inner.py").write_text(INNER_TESTS)
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 1, p.stdout + p.stderr
    assert (tmp_path / "once").read_text() == "2"  # failed once with the abort, passed when run again
    assert (tmp_path / "always").read_text() == "3"  # the first run and two reruns, then it fails
    assert (tmp_path / "other").read_text() == "1"  # never run again
    assert "1 passed" in p.stdout and "2 failed" in p.stdout and "3 rerun" in p.stdout, p.stdout
