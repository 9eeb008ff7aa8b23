"""Imported first by a child process started with the 'spawn' method under rehearsal (runtime._patch_spawn):
turns the rehearsal device on in the child before it imports the main script."""

from __future__ import annotations

from typing import Any

from torchport._leave import exit_code, leave
from torchport.rehearse import runtime

runtime.activate_from_env()


def spawn_main(*args: Any, **kwargs: Any) -> None:
    """multiprocessing's spawn_main, then torchport._leave.leave: a spawned rank exits without the C++
    teardown (gloo and autograd threads), which could abort it after its work was done."""
    from multiprocessing import spawn

    code = 0
    try:
        spawn.spawn_main(*args, **kwargs)
    except SystemExit as e:
        code = exit_code(e)
    leave(code)
