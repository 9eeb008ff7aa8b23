"""Imported first by a child process started with the 'spawn' method under rehearsal (runtime._patch_spawn):
turns the rehearsal device on in the child before it imports the main script."""

from __future__ import annotations

import os
import sys
from typing import Any

from torchport.rehearse import runtime

runtime.activate_from_env()


def spawn_main(*args: Any, **kwargs: Any) -> None:
    """multiprocessing's spawn_main, then a plain os._exit: a spawned rank exits without the interpreter's
    and the C++ teardown (gloo and autograd threads), which could abort it after its work was done."""
    from multiprocessing import spawn

    code = 0
    try:
        spawn.spawn_main(*args, **kwargs)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
