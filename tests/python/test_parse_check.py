"""The parser conformance harness: its comparison logic, then ours against CPython for real."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from torchport.dev import ast_spans, parse_check

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "syntax"


def test_oracle_spans_follow_cpython_conventions() -> None:
    src = 'import os as o\nwith open(f) as g, h:\n    x: int = o.path("a" "b")\n'
    spans = sorted(ast_spans.spans(ast.parse(src)))
    # alias covers `os as o`; withitem covers `open(f) as g`; the concatenated string is one Constant.
    assert ("alias", 1, 7, 1, 14) in spans
    assert ("withitem", 2, 5, 2, 17) in spans
    assert ("withitem", 2, 19, 2, 20) in spans
    assert ("Constant", 3, 20, 3, 27) in spans
    assert ("AnnAssign", 3, 4, 3, 28) in spans
    # Names: open, f, g, h, x, int, o -> seven Name nodes.
    assert sum(1 for s in spans if s[0] == "Name") == 7


def test_oracle_skips_fstring_literal_parts_and_format_specs() -> None:
    spans = ast_spans.spans(ast.parse('f"a{x:>{w}}b"\n'))
    kinds = sorted(s[0] for s in spans)
    # One JoinedStr (not the format spec's), the names x and w; no Constant for "a"/"b"/">".
    assert kinds == ["JoinedStr", "Name", "Name"]


def test_oracle_ignores_none_true_false_ellipsis() -> None:
    spans = ast_spans.spans(ast.parse("x = (None, True, ..., 1, b'z')\n"))
    # `1` is at column 22, `b'z'` spans columns 25-29.
    constants = sorted(s for s in spans if s[0] == "Constant")
    assert constants == [("Constant", 1, 22, 1, 23), ("Constant", 1, 25, 1, 29)]


def _rec(path: str, ok: bool, nodes: list[list[object]] | None = None, roundtrip: bool = True) -> dict:
    if ok:
        return {"path": path, "ok": True, "roundtrip": roundtrip, "nodes": nodes or []}
    return {"path": path, "ok": False, "error": {"line": 3, "col": 0, "message": "invalid syntax"}}


def test_compare_counts_each_kind_of_disagreement() -> None:
    files = ["same.py", "bad.py", "ours_rejects.py", "ast_rejects.py", "spans.py", "rt.py"]
    n = [["Name", 1, 0, 1, 1]]
    oracle = {
        "same.py": _rec("same.py", True, n),
        "bad.py": _rec("bad.py", False),
        "ours_rejects.py": _rec("ours_rejects.py", True, n),
        "ast_rejects.py": _rec("ast_rejects.py", False),
        "spans.py": _rec("spans.py", True, n),
        "rt.py": _rec("rt.py", True, n),
    }
    ours = {
        "same.py": _rec("same.py", True, n),
        "bad.py": _rec("bad.py", False),
        "ours_rejects.py": _rec("ours_rejects.py", False),
        "ast_rejects.py": _rec("ast_rejects.py", True, n),
        "spans.py": _rec("spans.py", True, [["Name", 1, 0, 1, 2]]),
        "rt.py": _rec("rt.py", True, n, roundtrip=False),
    }
    s = parse_check.compare(files, oracle, ours)
    assert (s.both_accept, s.both_reject) == (3, 1)
    assert (s.only_ours_rejects, s.only_ast_rejects, s.span_mismatch_files) == (1, 1, 1)
    assert s.roundtrip_failures == 1
    assert s.agreeing_files == 3
    assert not s.ok
    text = "\n".join(map(str, s.disagreements))
    assert "spans.py:1: CPython has Name 1:0-1:1; we have Name 1:0-1:2" in text
    assert "ours_rejects.py:3: we reject a file CPython accepts: invalid syntax" in text


def test_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "torchport", "dev", "parse-check", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 2
    assert "nope: no such file or directory" in p.stderr
    assert "Traceback" not in p.stderr


def _parse_check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchport", "dev", "parse-check", "--show", "50", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def _newest_cpython() -> tuple[str, tuple[int, int]]:
    """The newest CPython 3.12+ on PATH or installed by pyenv, else this one."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for minor in (14, 13, 12):
        candidates = [shutil.which(f"python3.{minor}")]
        candidates += [str(p) for p in sorted(pyenv_root.glob(f"versions/3.{minor}.*/bin/python3"))]
        for exe in filter(None, candidates):
            if subprocess.run([exe, "-c", "import ast"], capture_output=True).returncode == 0:
                return exe, (3, minor)
    return sys.executable, sys.version_info[:2]


def test_fixtures_and_examples_agree_with_cpython() -> None:
    # The syntax fixtures use the newest grammar (PEP 695 type parameters with PEP 696 defaults,
    # PEP 701 f-strings), so the oracle must be a CPython that has it.
    exe, version = _newest_cpython()
    if version < (3, 13):
        pytest.skip(f"needs CPython >= 3.13 on PATH as the oracle for the fixtures (found {version})")
    p = _parse_check("--python", exe, str(FIXTURES), str(REPO / "examples"), str(REPO / "python"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "(100.000%)" in p.stdout


@pytest.mark.slow
def test_whole_standard_library_agrees_with_cpython() -> None:
    """The bar of the Foundation issue: 100% agreement and round trip over the stdlib."""
    p = _parse_check(sysconfig.get_paths()["stdlib"])
    assert p.returncode == 0, p.stdout[-5000:] + p.stderr[-2000:]
