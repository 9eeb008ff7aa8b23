"""Imported first by a child process started with the 'spawn' method under rehearsal (runtime._patch_spawn):
turns the rehearsal device on in the child before it imports the main script."""

from __future__ import annotations

from typing import Any, Callable

# What must wait until the rehearsal device is on in this child: the .pth hook's redirect
# (torchport._autohook, in a rank of `torchport rehearse ... -m torchport run`) fires at `import torch`, which
# the import below makes, and would look for the target's package before the rehearsal provides it.
AFTER_ACTIVATION: list[Callable[[], None]] = []

from torchport._leave import exit_code, leave  # noqa: E402
from torchport.rehearse import runtime  # noqa: E402

runtime.activate_from_env()
for _after in AFTER_ACTIVATION:
    _after()


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
