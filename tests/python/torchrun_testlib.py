"""Launching several plain-torch processes (torchrun, mp.spawn) in tests."""

from __future__ import annotations

import re
import subprocess
from typing import Any, Callable, Optional, Sequence

import pytest

# What libstdc++ prints when a process aborts in torch's C++ static teardown, after its work is done, with
# threads still unwinding (pytorch/pytorch#38228). CI saw it on plain-torch gloo ranks under load (exit -6
# of one rank, so torchrun fails), in runs that torchport does not touch.
TEARDOWN_ABORT = "terminate called without an active exception"


def mark_teardown_reruns(items: Sequence[pytest.Item], reruns: int = 2) -> None:
    """Marks every test to be run again (pytest-rerunfailures) when its failure's message carries
    TEARDOWN_ABORT, as the tests' `assert p.returncode == 0, stderr` do. Used by conftest.py for the suite."""
    for item in items:
        item.add_marker(pytest.mark.flaky(reruns=reruns, only_rerun=[re.escape(TEARDOWN_ABORT)]))


def run_ranks(
    cmd: Sequence[str], attempts: int = 3, reset: Optional[Callable[[], None]] = None, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """subprocess.run, run again when a rank aborted in the teardown, up to `attempts` runs in all; the last
    run is returned as is. `reset` is called before each new run, to remove what the aborted run wrote.
    (CI saw two aborts in a row of the plain-torch reference run of test_rehearse_ddp under load; 0 in 10
    runs on an idle machine.)"""
    p: subprocess.CompletedProcess[str] = subprocess.run(list(cmd), **kwargs)
    for _ in range(attempts - 1):
        if p.returncode == 0 or TEARDOWN_ABORT not in (p.stderr or ""):
            break
        if reset is not None:
            reset()
        p = subprocess.run(list(cmd), **kwargs)
    return p
