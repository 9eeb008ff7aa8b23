"""What child.py installs in a process, in an importable module (pickled into spawned workers)."""

from __future__ import annotations

import sys
from typing import Any

_RECORDER: Any = None


def _install(cfg: dict[str, Any]) -> Any:
    global _RECORDER
    from torchport.verify.recorder import Recorder

    _RECORDER = Recorder(cfg)
    _RECORDER.install()
    _patch_spawn(cfg)
    return _RECORDER


class _Worker:
    """A picklable wrapper around the function given to torch.multiprocessing.spawn."""

    def __init__(self, fn: Any, cfg: dict[str, Any]) -> None:
        self.fn = fn
        self.cfg = cfg

    def __call__(self, i: int, *args: Any) -> None:
        from torchport.verify.recorder import VerifyStop

        if self.cfg["mode"] == "run":
            from torchport import runtime

            runtime.enable(self.cfg["target"], cuda_available="target")
        from torchport._leave import leave

        rec = _install(self.cfg)
        code = 0
        try:
            self.fn(i, *args)
        except VerifyStop:
            leave(0)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
            rec.finish("ok" if code == 0 else f"exit code {code}", code)
            raise
        except BaseException:
            rec.finish("exception", 1)
            raise
        rec.finish("ok", 0)
        # The rank's work is done and recorded: leave without the C++ static teardown, which can
        # abort a gloo rank after a successful run (pytorch/pytorch#38228; seen in CI on ddp_train).
        # What torch.multiprocessing's _wrap does after a normal return is nothing.
        leave(0)


def _patch_spawn(cfg: dict[str, Any]) -> None:
    try:
        import torch.multiprocessing as tmp

        sp = sys.modules["torch.multiprocessing.spawn"]
    except ImportError:  # pragma: no cover
        return
    if getattr(sp.start_processes, "_torchport_verify", False):
        return
    orig = sp.start_processes

    def start_processes(fn: Any, args: Any = (), nprocs: int = 1, *a: Any, **k: Any) -> Any:
        return orig(_Worker(fn, cfg), args, nprocs, *a, **k)

    start_processes._torchport_verify = True  # type: ignore[attr-defined]
    sp.start_processes = start_processes
    tmp.start_processes = start_processes
