"""Children started with the multiprocessing `spawn` method (torch.multiprocessing.spawn, DataLoader workers
with multiprocessing_context="spawn", ProcessPoolExecutor) are redirected like their parent, in every install
mode: pip install (the .pth hook), editable installs, a source tree on PYTHONPATH, or enable() called from
Python with no TORCHPORT_* variables at all.

How: while the redirect is on, `multiprocessing.spawn.get_command_line` (which builds the child's
`python -c "from multiprocessing.spawn import spawn_main; ..."`) gets a prefix that makes torchport importable
in the child and arms it with the parent's settings; the child enables the redirect right after its first
`import torch` (the unpickling of the target function imports the parent's modules). Nothing is needed from
site-packages, so it does not depend on the .pth hook. Not covered: the `forkserver` method (its server is
started once, by its own command line) and `fork` (the child is a copy of the parent: already redirected).
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the child imports this module before torch: nothing here may import torch
    from torchport.runtime._session import Session

_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # holds torchport/


def settings(s: Session, shims: tuple[str, ...], log_all_ranks: bool) -> dict[str, Any]:
    return {
        "target": s.target.name,
        "cuda_available": s.cuda_available,
        "strict": s.strict,
        "log": os.path.abspath(s.log.requested) if s.log.requested else None,
        "log_all_ranks": log_all_ranks,
        "shims": list(shims),
        "track_sites": s.log.track,
    }


def prefix(conf: dict[str, Any]) -> str:
    """The python statements the child runs before multiprocessing's own spawn_main."""
    return (
        f"import sys; sys.path.append({_PARENT!r}) if {_PARENT!r} not in sys.path else None; "
        f"import torchport.runtime._spawn as _tp_spawn; _tp_spawn.child({json.dumps(conf)!r}); "
    )


def install(s: Session, *, shims: tuple[str, ...], log_all_ranks: bool) -> None:
    import multiprocessing.spawn as mp_spawn

    orig = mp_spawn.get_command_line
    pre = prefix(settings(s, shims, log_all_ranks))

    def get_command_line(**kwds: Any) -> list[str]:
        cmd = list(orig(**kwds))
        if "-c" in cmd:
            i = cmd.index("-c") + 1
            if i < len(cmd) and "torchport" not in cmd[i]:
                cmd[i] = pre + cmd[i]
        return cmd

    s.patcher.set(mp_spawn, "get_command_line", get_command_line)


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
    from torchport.runtime._lazy import PostImport

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
