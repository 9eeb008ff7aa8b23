"""Leaving a process the way Python's own exit does, minus the C++ static teardown.

A process that ran backward passes on a non-CPU device (the rehearsal device) or used gloo holds C++
threads that the interpreter's finalisation can unwind through noexcept frames, which aborts the process
("terminate called without an active exception", pytorch/pytorch#38228) after its work is done and turns
a successful run into exit -6. `leave` does everything of Python's exit that a program can observe (joins
non-daemon threads, runs the atexit handlers, flushes the standard streams) and then ends the process
with `os._exit`, so that the exit code is the program's own. Nothing here imports torch.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn, Optional


def exit_code(e: SystemExit) -> int:
    """The status the interpreter would give for an uncaught SystemExit (printing a non-int message)."""
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code & 0xFF
    print(e.code, file=sys.stderr)
    return 1


def leave(code: int) -> NoReturn:
    shutdown: Optional[object] = getattr(threading, "_shutdown", None)
    if callable(shutdown) and threading.current_thread() is threading.main_thread():
        try:
            shutdown()  # what Py_FinalizeEx does first: wait for the non-daemon threads
        except BaseException:  # noqa: BLE001 - a thread's failure must not change the exit code
            pass
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
