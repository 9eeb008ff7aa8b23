"""The in-process recorder that `torchport verify` injects into each run (see child.py).

Per optimizer step it records every scalar that backward() is called on (the loss, with its bits; when
it is a GradScaler's `scale(loss)`, the scale and the unscaled loss too, which is what the tables show),
the gradient norm seen by `optimizer.step()` (after GradScaler's unscale), and a checksum of every
parameter after the step (CRC-32 of the bytes, float64 sum). The probe (torchport.probe.Probe, in
script mode) records the per-layer statistics at the chosen level. After N optimizer steps the run
stops cleanly: the trace and the dump are written, then `VerifyStop` (a SystemExit with status 0)
leaves the script from inside `optimizer.step()`.

Files written into the run's directory, one set per process (`P` = pid):
- `P.steps.jsonl`: one line per optimizer step, written as it ends (a crash keeps them);
- `P.json`: the process's summary (rank, status, counts, notes), written at the end;
- `P.dump/`: the probe dump.
"""

from __future__ import annotations

import json
import math
import os
import random
import warnings
import zlib
from pathlib import Path
from typing import Any, Optional

import torch


class VerifyStop(SystemExit):
    """Raised from optimizer.step() after the requested number of steps: a clean exit (status 0)."""

    def __init__(self) -> None:
        super().__init__(0)


def _bits(x: float) -> str:
    return float(x).hex()


def _crc_tensor(t: torch.Tensor, h: int) -> int:
    x = t.detach()
    if x.device.type != "cpu":
        x = x.cpu()
    x = x.contiguous()
    if x.dtype == torch.bfloat16 or x.dtype == torch.float16:
        x = x.view(torch.int16)
    elif x.dtype == torch.bool:
        x = x.view(torch.uint8)
    return zlib.crc32(memoryview(x.numpy()).cast("B"), h)


def _scalar(t: torch.Tensor) -> float:
    """The value of a one-element tensor, on the host (float64 kept as it is)."""
    if t.dtype == torch.float64:
        return float(t.detach().cpu().reshape(()).item())
    return float(t.detach().float().cpu().reshape(()).item())


def _finite(v: float) -> Any:
    """v, or its name when it is not finite (JSON has no inf or nan)."""
    return v if math.isfinite(v) else str(v)


class Recorder:
    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.out = Path(cfg["out"])
        self.steps_wanted: int = int(cfg["steps"])
        self.seed: int = int(cfg["seed"])
        self.level: str = cfg.get("level", "module")
        self.pid = os.getpid()
        self.step = 0
        self.losses: list[dict[str, Any]] = []
        self.backward_calls = 0
        self.nonscalar_backward = 0
        self.grad_norm: Optional[float] = None
        self.notes: list[str] = []
        self._noted: set[str] = set()
        self._depth = 0
        self._finished = False
        self._handles: list[Any] = []
        self._steps_file: Any = None
        self.probe: Any = None
        self._names: dict[int, str] = {}
        # id(scaled) -> (scaled, the scale, the unscaled loss): what GradScaler.scale returned last
        self._scaled: dict[int, tuple[torch.Tensor, float, float]] = {}

    # ---- setup -------------------------------------------------------------------------------

    def note(self, text: str) -> None:
        if text not in self._noted:
            self._noted.add(text)
            self.notes.append(text)

    def install(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        self._steps_file = open(self.out / f"{self.pid}.steps.jsonl", "w", encoding="utf-8")
        self._determinism()
        from torchport.probe.recorder import Probe

        # The probe first: its optimizer post-hook must see step N before ours stops the run.
        self.probe = Probe(None, out=self.out / f"{self.pid}.dump", level=self.level, steps=self.steps_wanted)
        self.probe.warn_dropped = False
        self.probe.start()
        from torch.optim import optimizer as _opt

        self._handles.append(_opt.register_optimizer_step_pre_hook(self._pre_step))
        self._handles.append(_opt.register_optimizer_step_post_hook(self._post_step))
        self._patch_backward()
        self._patch_grad_scaler()

    def _determinism(self) -> None:
        random.seed(self.seed)
        try:
            import numpy as np

            np.random.seed(self.seed)
        except ImportError:  # pragma: no cover - numpy is a dependency
            pass
        torch.manual_seed(self.seed)
        torch.set_num_threads(1)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        rec = self
        orig_show = warnings.showwarning

        def show(message: Any, category: Any, filename: str, lineno: int, *a: Any, **k: Any) -> None:
            text = str(message)
            if "deterministic" in text:
                rec.note(f"{filename}:{lineno}: not deterministic: {text.splitlines()[0][:200]}")
            orig_show(message, category, filename, lineno, *a, **k)

        warnings.showwarning = show  # type: ignore[assignment]
        self._patch_dataloader()
        self._patch_threads()

    def _patch_dataloader(self) -> None:
        from torch.utils.data import DataLoader

        init = DataLoader.__init__
        rec = self

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
            workers = kwargs.get("num_workers", args[5] if len(args) > 5 else 0)
            if workers:
                rec.note(f"DataLoader num_workers={workers} was set to 0 (one process, the same order)")
                if len(args) > 5:
                    args = (*args[:5], 0, *args[6:])
                else:
                    kwargs["num_workers"] = 0
                kwargs.pop("prefetch_factor", None)
                kwargs.pop("persistent_workers", None)
            init(self, *args, **kwargs)

        DataLoader.__init__ = __init__  # type: ignore[method-assign]

    def _patch_threads(self) -> None:
        orig = torch.set_num_threads
        rec = self

        def set_num_threads(n: int) -> None:
            if n != 1:
                rec.note(f"torch.set_num_threads({n}) was kept at 1 thread")
            orig(1)

        torch.set_num_threads = set_num_threads

    def _patch_backward(self) -> None:
        rec = self
        tensor_backward = torch.Tensor.backward
        autograd_backward = torch.autograd.backward

        def backward(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            rec._on_backward(self)
            rec._depth += 1
            try:
                return tensor_backward(self, *args, **kwargs)
            finally:
                rec._depth -= 1

        def ag_backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            if rec._depth == 0:
                for t in tensors if isinstance(tensors, (list, tuple)) else (tensors,):
                    if isinstance(t, torch.Tensor):
                        rec._on_backward(t)
            rec._depth += 1
            try:
                return autograd_backward(tensors, *args, **kwargs)
            finally:
                rec._depth -= 1

        torch.Tensor.backward = backward  # type: ignore[method-assign]
        torch.autograd.backward = ag_backward

    def _patch_grad_scaler(self) -> None:
        """GradScaler.scale(loss) of one tensor: the scale and the unscaled loss are noted, so that the
        loss backward() receives (multiplied by the scale) can be shown unscaled. torch.cuda.amp's
        GradScaler inherits this method."""
        from torch.amp.grad_scaler import GradScaler

        orig = GradScaler.scale
        rec = self

        def scale(self: Any, outputs: Any) -> Any:
            out = orig(self, outputs)
            if isinstance(outputs, torch.Tensor) and out is not outputs and outputs.numel() == 1:
                try:
                    factor = float(self.get_scale())
                    rec._scaled = {id(out): (out, factor, _scalar(outputs))}
                except (RuntimeError, TypeError, ValueError):  # pragma: no cover - a scaler torch changed
                    rec._scaled = {}
            return out

        GradScaler.scale = scale  # type: ignore[method-assign]

    # ---- hooks -------------------------------------------------------------------------------

    def _on_backward(self, t: torch.Tensor) -> None:
        if self._depth or self._finished:
            return
        self.backward_calls += 1
        if t.numel() != 1:
            self.nonscalar_backward += 1
            return
        v = _scalar(t)
        loss: dict[str, Any] = {"value": _finite(v), "bits": _bits(v), "dtype": str(t.dtype)}
        scaled = self._scaled.pop(id(t), None)
        if scaled is not None and scaled[0] is t:
            loss["scale"] = scaled[1]
            loss["unscaled"] = _finite(scaled[2])
        self.losses.append(loss)

    def _params(self, optimizer: Any) -> list[tuple[str, torch.Tensor]]:
        if not self._names and self.probe is not None:
            from torchport.probe.dump import normalize_name

            wrappers = frozenset(self.probe._wrappers)
            for prefix, root in self.probe._roots:
                for name, p in root.named_parameters():
                    full = f"{prefix}.{name}" if prefix else name
                    self._names.setdefault(id(p), normalize_name(full, wrappers))
        out = []
        for g, group in enumerate(optimizer.param_groups):
            for i, p in enumerate(group["params"]):
                out.append((self._names.get(id(p), f"param_groups[{g}][{i}]"), p))
        return out

    def _pre_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self._finished:
            return
        sq = 0.0
        for _, p in self._params(optimizer):
            if p.grad is not None:
                # on the host: the device may refuse float64 (npu), and the checks are not the script's ops
                sq += float(torch.linalg.vector_norm(p.grad.detach().to("cpu", torch.float64)).item()) ** 2
        self.grad_norm = math.sqrt(sq)

    def _post_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self._finished:
            return
        h = 0
        total = 0.0
        sq = 0.0
        params = []
        for name, p in self._params(optimizer):
            c = _crc_tensor(p, 0)
            x = p.detach().to("cpu", torch.float64)
            s = float(x.sum().item())
            n = float(torch.linalg.vector_norm(x).item())
            h = zlib.crc32(c.to_bytes(4, "little"), h)
            total += s
            sq += n * n
            params.append([name, f"{c:08x}", s, n])
        rec = {
            "step": self.step,
            "losses": self.losses,
            "grad_norm": self.grad_norm,
            "param_crc": f"{h:08x}",
            "param_sum": total,
            "param_norm": math.sqrt(sq),
            "params": params,
        }
        self._steps_file.write(json.dumps(rec) + "\n")
        self._steps_file.flush()
        self.losses = []
        self.grad_norm = None
        self.step += 1
        if self.step >= self.steps_wanted:
            self.finish("stopped", 0)
            raise VerifyStop()

    # ---- end ---------------------------------------------------------------------------------

    def finish(self, status: str, code: int) -> None:
        if self._finished:
            return
        self._finished = True
        for h in self._handles:
            h.remove()
        dump = None
        if self.probe is not None:
            try:
                dump = str(self.probe.close(status="ok" if status in ("stopped", "ok") else status))
            except Exception as e:  # noqa: BLE001 - the trace is still written
                self.note(f"probe dump not written: {e}")
        rank = os.environ.get("RANK")
        world = os.environ.get("WORLD_SIZE")
        try:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                rank, world = str(dist.get_rank()), str(dist.get_world_size())
        except Exception:  # noqa: BLE001
            pass
        summary = {
            "pid": self.pid,
            "rank": int(rank) if rank is not None else None,
            "world_size": int(world) if world is not None else None,
            "status": status,
            "exit_code": code,
            "steps": self.step,
            "pending_losses": self.losses,
            "backward_calls": self.backward_calls,
            "nonscalar_backward": self.nonscalar_backward,
            "notes": self.notes,
            "dump": dump,
            "records": self.probe._seq if self.probe is not None else 0,
        }
        if self._steps_file is not None:
            self._steps_file.close()
        tmp = self.out / f".{self.pid}.json.tmp"
        tmp.write_text(json.dumps(summary, indent=1), encoding="utf-8")
        os.replace(tmp, self.out / f"{self.pid}.json")
