"""What a runtime patch cannot change: a comparison of a device's type with "cuda" (issue 33 §3).

`x.device.type == "cuda"` compares two strings: no patch can see it, and under the redirect the tensor's
device is the target's, so the script's own CUDA test answers False (its AMP or its CUDA branch silently
turns off). At start, `torchport run` runs the C++ analyzer (the core of `torchport analyze`) over the
script's project, which costs milliseconds, and logs each such comparison with its file:line and what it
evaluates to for a tensor on the target; a start-up line and the summary count them.

The analyzer is asked as for `--target cpu`, where it keeps these comparisons and says so (TP300
"comparison with "cuda" kept", TP700 "a comparison with a CUDA device type"): on the other targets it
rewrites them, and its message no longer says "comparison". tests/python/test_runtime_comparisons.py pins
both texts.
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import Any, Optional, Sequence

from torchport import report_json
from torchport.runtime._log import MISMATCH

# the analyzer's messages for a comparison with a CUDA device type (C++ core, rules TP300 and TP700)
_MARKS = ('comparison with "cuda"', "a comparison with a CUDA device type")
_OP_BEFORE = re.compile(r"(==|!=|\bis not|\bis|\bnot in|\bin)\s*\(?\s*$")
_OP_AFTER = re.compile(r"^\s*(==|!=|is not\b|is\b)")
API = 'device type compared with "cuda"'
TIMEOUT_S = 30.0


# Launchers whose program is in their arguments: the project is the program's, not torch's
LAUNCHERS = ("torch.distributed.run", "torch.distributed.launch")


def project_of(script: Optional[str], module: Optional[str], args: Sequence[str] = ()) -> Optional[str]:
    """The directory analyzed: the script's own, or the top package directory of `-m module`; for torchrun
    (`-m torch.distributed.run ... [-m] program`), the program's. None for a package installed in
    site-packages (not the user's project: analyzing it would analyze every installed package)."""
    if module in LAUNCHERS:
        script, module = _launched(args)
    if script is not None:
        return os.path.dirname(os.path.abspath(script)) or "."
    if module is None:
        return None
    import importlib.util

    try:
        spec = importlib.util.find_spec(module.split(".", 1)[0])
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        return None
    path = os.path.dirname(os.path.abspath(spec.origin))
    project = os.path.dirname(path) if spec.submodule_search_locations else path
    return None if os.path.basename(project) in ("site-packages", "dist-packages") else project


def _launched(args: Sequence[str]) -> tuple[Optional[str], Optional[str]]:
    """(script, module) that torchrun's own argument parser finds in `args`; (None, None) for `--no-python`
    or arguments it refuses."""
    import contextlib
    import io

    from torch.distributed.run import get_args_parser

    try:
        with contextlib.redirect_stderr(io.StringIO()):  # its usage message is not ours to print
            ns = get_args_parser().parse_args(list(args))
    except SystemExit:
        return None, None
    if getattr(ns, "no_python", False) or not ns.training_script:
        return None, None
    return (None, ns.training_script) if ns.module else (ns.training_script, None)


def find(project: str, timeout: float = TIMEOUT_S) -> list[tuple[str, int, int]]:
    """(absolute file, line, column of the "cuda" literal) of each comparison of a device type with "cuda" in
    `project`, from the C++ analyzer. Raises RuntimeError with the reason when it cannot run."""
    from torchport._core import CoreNotFoundError, core_binary

    try:
        exe = core_binary()
    except CoreNotFoundError as e:
        raise RuntimeError(str(e)) from None
    try:
        done = subprocess.run(
            [exe, "analyze", "-t", "cpu", "--format", "json", "-q", project],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"{type(e).__name__}: {e}") from None
    if done.returncode not in (0, 1, 3):  # 1: CUDA code found, 3: a file not migrated (the others were)
        raise RuntimeError(f"the analyzer exited with {done.returncode}: {done.stderr.strip()[:200]}")
    try:
        report: dict[str, Any] = report_json.loads(done.stdout)
    except ValueError as e:  # json.JSONDecodeError, report_json.ReportFormatError
        raise RuntimeError(f"unreadable analyzer report: {e}") from None
    base = project if os.path.isdir(project) else os.path.dirname(project)
    out = []
    for f in report.get("findings", ()):
        message = str(f.get("message", ""))
        if not any(m in message for m in _MARKS):
            continue
        path = os.path.join(base, f["file"])
        out.append((os.path.abspath(path), int(f["start_line"]), int(f.get("column", 0))))
    return sorted(set(out))


def answer(line: str, column: int) -> Optional[bool]:
    """What the comparison whose "cuda" literal starts at 1-based `column` gives for a tensor on the target:
    False for ==, True for !=, None when the line does not show which."""
    i = max(column - 1, 0)
    m = _OP_BEFORE.search(line[:i])
    op = m.group(1) if m else None
    if op is None:
        rest = line[i:]
        close = rest.find('"', 1) if rest.startswith('"') else rest.find("'", 1)
        m = _OP_AFTER.match(rest[close + 1 :]) if close > 0 else None
        op = m.group(1) if m else None
    if op in ("==", "is", "in"):
        return False
    if op in ("!=", "is not", "not in"):
        return True
    return None


def log_comparisons(session: Any, project: str) -> int:
    """Log each comparison found in `project` (a mismatch site at its line) and note their count; returns it.
    A failure to analyze is noted, never raised: the run goes on."""
    import linecache

    dst = session.target.device_type
    try:
        found = find(project)
    except RuntimeError as e:
        session.log.note(f'comparisons of a device type with "cuda" not looked for: {e}')
        return 0
    for path, lineno, column in found:
        got = answer(linecache.getline(path, lineno), column)
        value = "False" if got is False else "True" if got is True else "the non-CUDA answer"
        session.log.static(
            path,
            lineno,
            API,
            'device.type vs "cuda" (a string comparison no patch can see)',
            f"{value} for a tensor or module on {dst}",
            MISMATCH,
            f"the script's CUDA test: its CUDA branch (AMP, ...) is skipped on {dst}; a "
            "torch.device('cuda') it builds keeps type 'cuda'; use torchport.runtime.is_cuda_device(x)",
        )
    if found:
        text = (
            f'{len(found)} comparison(s) of a device type with "cuda" in {project}: each answers as for a '
            f"device that is not CUDA on {dst} (a patch cannot change them; listed in the log)"
        )
        session.log.note(text)
        if getattr(session, "print_summary", False) and session.log.prints_summary():
            import sys

            print(f"torchport: {text}", file=sys.stderr)  # at start: before the script's own output
    return len(found)
