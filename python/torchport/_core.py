"""Locating the C++ core executable shipped in the package."""

from __future__ import annotations

import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent


class CoreNotFoundError(RuntimeError):
    pass


def core_binary() -> str:
    """Path of the C++ `torchport` executable.

    Order: $TORCHPORT_CORE, the copy installed in the package (torchport/_bin), then a
    development build in the source tree (build/*/torchport).
    """
    env = os.environ.get("TORCHPORT_CORE")
    if env:
        return env
    installed = _HERE / "_bin" / "torchport"
    if installed.is_file():
        return str(installed)
    repo = _HERE.parent.parent
    for candidate in sorted(repo.glob("build/*/torchport")) + [repo / "build" / "torchport"]:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    import shutil  # only here: the core is found above on every normal install

    found = shutil.which("torchport-core")
    if found:
        return found
    raise CoreNotFoundError(
        "torchport's C++ core was not found: reinstall torchport (`pip install .` in its clone, or the "
        "wheel built there: README, 'Install a wheel') or set TORCHPORT_CORE to the built `torchport` "
        "executable"
    )
