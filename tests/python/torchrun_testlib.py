"""Launching several plain-torch processes (torchrun, mp.spawn) in tests."""

from __future__ import annotations

import subprocess
from typing import Any, Sequence

# What libstdc++ prints when a process aborts in torch's C++ static teardown, after its work is done, with
# threads still unwinding (pytorch/pytorch#38228). CI saw it on plain-torch gloo ranks under load (exit -6
# of one rank, so torchrun fails), in runs that torchport does not touch.
TEARDOWN_ABORT = "terminate called without an active exception"


def run_ranks(cmd: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """subprocess.run, retried once when a rank aborted in the teardown; a second abort is returned as is."""
    p: subprocess.CompletedProcess[str] = subprocess.run(list(cmd), **kwargs)
    if p.returncode != 0 and TEARDOWN_ABORT in (p.stderr or ""):
        p = subprocess.run(list(cmd), **kwargs)
    return p
