"""Run a script or module like `python path args...` / `python -m name args...` and return its exit code."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from types import TracebackType
from typing import Callable, Optional

_SKIP = {os.path.abspath(__file__), os.path.abspath(runpy.__file__), os.path.abspath("<frozen runpy>")}


def _user_tb(tb: Optional[TracebackType]) -> Optional[TracebackType]:
    """Drop our own and runpy's frames from the top of a traceback, as python's own output would."""
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) in _SKIP:
        tb = tb.tb_next
    return tb


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


# The exception the last run ended with (None: it returned or called sys.exit), for callers that
# tell "raised" from "exited with N" (probe's manifest status).
last_exception: Optional[BaseException] = None


def _run(argv0: str, argv: list[str], path0: str, call: Callable[[], object]) -> int:
    global last_exception
    last_exception = None
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [argv0, *argv]
    sys.path.insert(0, path0)
    try:
        call()
        return 0
    except SystemExit as e:
        return _exit_code(e.code)
    except KeyboardInterrupt as e:
        traceback.print_exception(type(e), e, _user_tb(e.__traceback__))
        return 130
    except BaseException as e:  # noqa: BLE001 - printed like python prints it
        last_exception = e
        sys.stderr.flush()
        if getattr(type(e), "torchport_short", False):  # our own policy errors: one located line
            print(f"torchport: error: {e}", file=sys.stderr)
            return 1
        traceback.print_exception(type(e), e, _user_tb(e.__traceback__))
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        sys.stdout.flush()
        sys.stderr.flush()


def run_script(path: str, argv: list[str]) -> int:
    """Run the file at `path` as __main__ with sys.argv = [path, *argv]; return its exit code."""
    if not os.path.isfile(path):
        print(f"torchport run: can't open file {path!r}: no such file", file=sys.stderr)
        return 2
    full = os.path.abspath(path)
    return _run(path, argv, os.path.dirname(full), lambda: runpy.run_path(full, run_name="__main__"))


def run_module(name: str, argv: list[str]) -> int:
    """Run module `name` as __main__ (like python -m); return its exit code."""
    import importlib.util

    saved_path = sys.path[:]
    sys.path.insert(0, os.getcwd())  # as `python -m` does: the current directory is searched first
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as e:
        spec = None
        err = str(e)
    else:
        err = "no such module"
    finally:
        sys.path[:] = saved_path
    if spec is None:
        print(f"torchport run: no module named {name!r} ({err})", file=sys.stderr)
        return 2
    return _run(
        spec.origin or name,
        argv,
        os.getcwd(),
        lambda: runpy.run_module(name, run_name="__main__", alter_sys=True),
    )
