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
        f"import torchport.runtime._spawn_child as _tp_spawn; _tp_spawn.child({json.dumps(conf)!r}); "
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
