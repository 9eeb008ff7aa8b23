"""What a child started with the `spawn` method runs first (its command line comes from _spawn.prefix): enable
the redirect with the parent's settings right after `import torch`. A module of its own, because it enables
through the runtime package, which imports _spawn: _spawn never imports the package back.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def child(conf_json: str) -> None:
    """In a spawned child: enable the redirect with the parent's settings right after `import torch`,
    and leave through torchport._leave once the child's work is done."""
    conf = json.loads(conf_json)
    _exit_without_teardown()

    def go(_torch: object = None) -> None:
        import torchport.runtime as rt

        if rt.is_enabled():  # the .pth hook was first (same settings, from the inherited environment)
            return
        try:
            rt.enable(
                conf["target"],
                log=conf["log"],
                strict=conf["strict"],
                cuda_available=conf["cuda_available"],
                shims=tuple(conf["shims"]),
                log_all_ranks=conf["log_all_ranks"],
                track_sites=conf["track_sites"],
            )
        except Exception as e:  # the parent ran on this target: say why the child cannot, and stop
            print(f"torchport: error: spawned child: {e}", file=sys.stderr)
            sys.stderr.flush()
            os._exit(2)

    if "torch" in sys.modules:
        go()
        return
    from torchport._lazy import PostImport

    finder = PostImport()

    def on_torch(module: Any) -> None:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        go(module)

    finder.callbacks["torch"] = on_torch
    sys.meta_path.insert(0, finder)


def _exit_without_teardown() -> None:
    """The child's command line goes on with `from multiprocessing.spawn import spawn_main; spawn_main(...)`:
    wrap that spawn_main so the child ends through torchport._leave.leave (atexit handlers, then os._exit)
    instead of the C++ static teardown, where gloo's threads can abort a rank whose work is done
    ("terminate called without an active exception", exit -6)."""
    import multiprocessing.spawn as mp_spawn

    orig = mp_spawn.spawn_main
    if getattr(orig, "_torchport", False):
        return

    def spawn_main(*args: Any, **kwargs: Any) -> None:
        from torchport._leave import exit_code, leave

        code = 0
        try:
            orig(*args, **kwargs)
        except SystemExit as e:
            code = exit_code(e)
        leave(code)

    spawn_main._torchport = True  # type: ignore[attr-defined]
    mp_spawn.spawn_main = spawn_main
