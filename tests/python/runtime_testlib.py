"""Helpers shared by the test_runtime_*.py files."""

from __future__ import annotations

import contextlib
import os
import random
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator, Optional

import torchport
import torchport.runtime as rt

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "runtime"
# torch's own error for a CUDA call where there is no CUDA: a CPU build says "Torch not compiled with CUDA
# enabled", a CUDA build (PyPI's torch 2.14) on a machine without a GPU "Found no NVIDIA driver on your
# system".
NO_CUDA = r"not compiled with CUDA|Found no NVIDIA driver"
PACKAGE_PARENT = str(Path(torchport.__file__).resolve().parent.parent)


def child_env(extra: Optional[dict[str, str]] = None) -> dict[str, str]:
    """Environment for a child python: finds this torchport, no TORCHPORT_* settings, offline hub."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHPORT_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p)
    env["HF_HUB_OFFLINE"] = "1"
    env["TRANSFORMERS_OFFLINE"] = "1"
    env["PYTHONWARNINGS"] = "ignore::FutureWarning"
    env.pop("CUDA_VISIBLE_DEVICES", None)
    if extra:
        env.update(extra)
    return env


def run_python(
    args: list[str], extra_env: Optional[dict[str, str]] = None, **kw: Any
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=child_env(extra_env), timeout=240, **kw
    )


def run_torchport(
    args: list[str], extra_env: Optional[dict[str, str]] = None, **kw: Any
) -> subprocess.CompletedProcess:
    return run_python(["-m", "torchport", *args], extra_env, **kw)


@contextlib.contextmanager
def enabled(target: Any = "cpu", **kw: Any) -> Iterator[Any]:
    """The redirect on for the body (call sites recorded), always undone."""
    kw.setdefault("track_sites", True)
    rt.enable(target, **kw)
    try:
        yield rt._active
    finally:
        rt.disable()


def free_port() -> int:
    """A free TCP port for a test's rendezvous (MASTER_PORT), taken below Linux's ephemeral range.

    `bind(("127.0.0.1", 0))` hands out a port from the ephemeral range (32768-60999), which every
    outgoing connection on the machine draws from too: between this call and the script's own listen,
    another test's connection could take it, and the store failed with EADDRINUSE (seen once in a full
    run, on two pytest workers). A random port in 20000-32767 that binds now is not handed out that way.
    """
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(20000, 32768)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free TCP port in 20000-32767")


def sites(session: Any) -> list[Any]:
    return list(session.log.sites.values())
