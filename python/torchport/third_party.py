"""`torchport analyze --third-party`: the library search paths of the active environment.

The C++ core does the analysis (src/torchport/callgraph); it cannot ask Python where the
installed libraries are, so without `--env` this front end passes the site-packages directories
of the interpreter that runs torchport (the active virtualenv or conda environment).
"""

from __future__ import annotations

import os
import site

# typing only for annotations: not imported at run time (every `torchport analyze` pays its imports first)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence


def default_env() -> list[str]:
    """The active environment's site-packages directories, in import order, without duplicates."""
    import sysconfig  # only for --third-party: every `torchport analyze` imports this module

    found: list[str] = []
    candidates: list[str] = []
    for key in ("purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            candidates.append(path)
    try:
        candidates.extend(site.getsitepackages())
    except AttributeError:  # some embedded interpreters lack it
        pass
    if site.ENABLE_USER_SITE:
        candidates.append(site.getusersitepackages())
    for path in candidates:
        real = os.path.realpath(path)
        if os.path.isdir(real) and real not in found:
            found.append(real)
    return found


def with_default_env(args: Sequence[str]) -> list[str]:
    """`args` plus `--env PATHS` of the active environment, when --third-party is given without it."""
    out = list(args)
    head = out[: out.index("--")] if "--" in out else out
    if "--third-party" not in head:
        return out
    if any(a == "--env" or a.startswith("--env=") for a in head):
        return out
    env = default_env()
    if env:
        out[len(head) : len(head)] = ["--env", os.pathsep.join(env)]
    return out
