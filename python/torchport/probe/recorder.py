"""Recording: module hooks (forward and backward) or a TorchDispatchMode (ATen ops) feed a DumpWriter.

Statistics are cheap and never force a device sync on their own:
- CPU tensors: numpy reductions on the tensor's own memory (no copy for float32/float64), and a
  CRC-32 of the raw bytes as the content hash;
- accelerator tensors: the six statistics are computed on the device into one small tensor; the
  small tensors are stacked and copied to the host in one transfer per flush (every few thousand
  records and at the end of each step), so probing adds no per-layer `.item()` sync. The content
  hash needs the bytes on the host, so on accelerators it is computed only with `--full-tensors`.

Backward records come from tensor hooks registered on each module's inputs and outputs during
the forward pass (not from `register_full_backward_hook`, which wraps tensors in a custom
autograd Function and makes `ReLU(inplace=True)` and `out += x` raise). A backward record is the
gradient of the loss with respect to that tensor.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import inspect
import os
import platform
import re
import warnings
import weakref
import zlib
from typing import Any, Callable, Optional

import numpy as np
import torch
from torch.utils._pytree import tree_leaves

from torchport.probe.dump import DDP_CHILD, WRAPPER_CHILDREN, DumpWriter, encode_float, normalize_name

_FLUSH_EVERY = 4096
_CACHE_LIMIT = 8192
_NODE_LIMIT = 1 << 20
_SKIP_OPS = {"aten.detach.default", "aten.alias.default", "aten.lift_fresh.default"}


def _dtype_name(dt: torch.dtype) -> str:
    return str(dt).replace("torch.", "")


def _host_view(t: torch.Tensor) -> tuple[np.ndarray, Optional[str]]:
    """A numpy view (or copy) of a CPU tensor's bytes, and how it is stored if not natively."""
    t = t.detach()
    if not t.is_contiguous():
        t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16), "bfloat16-bits"
    if t.dtype == torch.bool:
        return t.view(torch.uint8).numpy(), None
    return t.numpy(), None


def _numpy_stats(t: torch.Tensor, arr: np.ndarray, stored_as: Optional[str]) -> list[Any]:
    """[min, max, mean, norm, nan, inf] of a CPU tensor, with numpy."""
    if stored_as == "bfloat16-bits" or arr.dtype == np.float16:
        a = t.detach().float().numpy().reshape(-1) if stored_as else arr.astype(np.float32).reshape(-1)
    elif arr.dtype == np.bool_ or arr.dtype.kind in "iu":
        a = arr.reshape(-1).astype(np.float64)
    else:
        a = arr.reshape(-1)
    n = a.size
    s = float(a.sum())
    sq = float(np.dot(a, a))
    if not np.isfinite(sq) and np.isfinite(a.max()) and np.isfinite(a.min()):
        sq = float(np.dot(a.astype(np.float64), a.astype(np.float64)))
    if np.isfinite(s) and np.isfinite(sq):
        nan = inf = 0
    else:
        nan = int(np.count_nonzero(np.isnan(a)))
        inf = int(np.count_nonzero(np.isinf(a)))
    return [float(a.min()), float(a.max()), s / n, float(np.sqrt(sq)), nan, inf]


def _device_stats(t: torch.Tensor) -> torch.Tensor:
    """The same six statistics computed on the tensor's device, without a host sync."""
    x = t.detach()
    if not x.is_floating_point() or x.dtype not in (torch.float32, torch.float64):
        x = x.float()
    mn, mx = torch.aminmax(x)
    parts = (
        mn,
        mx,
        x.mean(),
        torch.linalg.vector_norm(x),
        torch.isnan(x).sum(),
        torch.isinf(x).sum(),
    )
    return torch.stack([p.to(torch.float32) for p in parts])


def _crc(arr: np.ndarray, dtype: str, shape: list[int]) -> str:
    h = zlib.crc32(f"{dtype}{shape}".encode())
    h = zlib.crc32(memoryview(np.ascontiguousarray(arr)).cast("B"), h)
    return f"crc32:{h:08x}"


def model_signature(
    roots: list[tuple[str, torch.nn.Module]], wrappers: Optional[frozenset[str]] = None
) -> dict[str, Any]:
    """Parameter names (wrapper components removed, see dump.normalize_name) and shapes: equal for
    the same model, whatever its dtype, device or wrappers (DDP, torch.compile, FSDP, activation
    checkpointing, also around a submodule)."""
    params: list[list[Any]] = []
    for prefix, root in roots:
        for name, p in root.named_parameters():
            full = f"{prefix}.{name}" if prefix else name
            params.append([normalize_name(full, wrappers), list(p.shape)])
    text = "\n".join(f"{n}:{s}" for n, s in params)
    return {
        "signature": hashlib.sha256(text.encode()).hexdigest()[:16],
        "parameters": params,
        "roots": [{"prefix": p, "type": type(r).__name__} for p, r in roots],
    }


class Probe:
    """Records per-module (or per-op) statistics of a run into a dump directory.

    Use as a context manager (``with torchport.probe(model, out="dump"):``). With ``model=None``
    every top-level module the code calls is probed (this is what script mode uses).
    """

    def __init__(
        self,
        model: Optional[torch.nn.Module] = None,
        out: os.PathLike | str = "probe_dump",
        level: str = "module",
        *,
        full_tensors: bool = False,
        max_tensor_bytes: Optional[int] = 1 << 30,
        steps: Optional[int] = None,
        filter: Optional[str] = None,
        param_grads: bool = False,
        command: Optional[list[str]] = None,
    ) -> None:
        if level not in ("module", "op"):
            raise ValueError(f"level must be 'module' or 'op', not {level!r}")
        if steps is not None and steps < 1:
            raise ValueError("steps must be at least 1")
        self.out = out
        self.level = level
        self.full_tensors = full_tensors
        self.max_tensor_bytes = max_tensor_bytes
        self.steps = steps
        self._filter = re.compile(filter) if filter else None
        self._command = command
        self.param_grads = param_grads
        self._param_calls: dict[str, int] = {}
        self._discover = model is None
        self._roots: list[tuple[str, torch.nn.Module]] = []
        self._names: dict[int, tuple[str, str, bool, bool]] = {}  # id -> name, type, leaf, wrapper
        self._wrappers: set[str] = set()  # paths of wrappers whose child is `module` (DDP, DP)
        # one entry per module call in progress: [id, name, call, positional tensors, kwargs seen]
        self._stack: list[list[Any]] = []
        self._kw_hooked: set[int] = set()
        self._nocompile: Callable[[Any], Any] = lambda f: f
        self._calls: dict[tuple[str, str], int] = {}
        self._seq = 0
        self._step = 0
        self._root_calls = 0
        self._opt_steps = 0
        self._active = False
        self._busy = False
        self._closed = False
        self._pending: list[dict[str, Any]] = []
        self._pending_dev: list[tuple[dict[str, Any], torch.Tensor]] = []
        self._cache: dict[int, tuple[Any, int, Any]] = {}
        # op level: autograd sequence number of a forward op's backward node -> module path
        self._node_modules: _BoundedDict = _BoundedDict(_NODE_LIMIT)
        self._handles: list[Any] = []
        self._mode: Any = None
        self._writer: Optional[DumpWriter] = None
        self.first_nonfinite: Optional[dict[str, Any]] = None
        self.tensors_dropped = 0  # full tensors not saved: over the size budget
        self.tensor_bytes_dropped = 0
        self.warn_dropped = True  # warn at close() about them (the CLI prints its own summary)
        # CPU tensors get numpy statistics and a hash; False sends them down the accelerator path
        # (on-device statistics, one batched host copy per flush), which is how tests cover it.
        self._host_stats = True
        if model is not None:
            self._add_root(model)

    # ---- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> Probe:
        self.start()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close(status="ok" if exc_type is None else f"error: {exc_type.__name__}")

    def start(self) -> None:
        from torch.nn.modules import module as _m
        from torch.optim import optimizer as _opt

        self._writer = DumpWriter(self.out)
        # torch.compile must not trace the hooks (they read tensor data): it runs them eagerly.
        nocompile = getattr(torch.compiler, "disable", lambda f: f)
        self._nocompile = nocompile
        self._handles.append(_m.register_module_forward_pre_hook(nocompile(self._pre_hook)))
        self._handles.append(
            _m.register_module_forward_hook(nocompile(self._post_hook), with_kwargs=True, always_call=True)
        )
        self._handles.append(_opt.register_optimizer_step_post_hook(self._opt_hook))
        for prefix, root in self._roots:
            self._hook_params(prefix, root)
            self._hook_kwargs(root)
        if self.level == "op":
            self._mode = _make_dispatch_mode(self)
            self._mode.__enter__()
        self._active = True

    def step(self) -> None:
        """Mark the end of a training step (optimizer.step() does this automatically)."""
        self._opt_steps += 1
        self._step = self._opt_steps
        self._after_step()

    def close(self, status: str = "ok") -> Optional[os.PathLike | str]:
        if self._closed:
            return None
        self._closed = True
        self._active = False
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        for h in self._handles:
            h.remove()
        self._handles.clear()
        assert self._writer is not None
        self._flush()
        manifest: dict[str, Any] = {
            "level": self.level,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "status": status,
            "steps_recorded": self._step + 1 if self._seq else 0,
            "full_tensors": self.full_tensors,
            "tensor_budget": self.max_tensor_bytes,
            "filter": self._filter.pattern if self._filter else None,
            "torch": torch.__version__,
            "python": platform.python_version(),
            "host": platform.node(),
            "command": self._command,
            "model": model_signature(self._roots, frozenset(self._wrappers)),
            "wrappers": sorted(self._wrappers),
            "first_nonfinite": self.first_nonfinite,
        }
        path = self._writer.close(manifest)
        self._cache.clear()
        self.tensors_dropped = self._writer.tensors_dropped
        self.tensor_bytes_dropped = self._writer.tensor_bytes_dropped
        if self.tensors_dropped and self.warn_dropped:
            warnings.warn(f"torchport.probe: {self.dropped_summary()}", stacklevel=2)
        return path

    def dropped_summary(self) -> str:
        """One line on the full tensors not saved because of the size budget."""
        total = self.tensors_dropped + (self._writer.tensors_saved if self._writer else 0)
        return (
            f"{self.tensors_dropped} of {total} "
            f"tensors ({_mib(self.tensor_bytes_dropped)}) were not saved: the tensor budget of "
            f"{_mib(self.max_tensor_bytes or 0)} (max_tensor_bytes / --max-tensor-bytes) was spent; "
            "their records keep statistics only"
        )

    # ---- naming ----------------------------------------------------------------------------

    def _add_root(self, model: torch.nn.Module) -> None:
        prefix = ""
        if self._roots:
            base = type(model).__name__
            taken = {p for p, _ in self._roots}
            prefix, k = base, 1
            while prefix in taken:
                k += 1
                prefix = f"{base}{k}"
        self._roots.append((prefix, model))
        for name, mod in model.named_modules():
            if id(mod) in self._names:
                continue
            full = f"{prefix}.{name}" if prefix and name else (prefix or name)
            children = list(mod.named_children())
            wrapper = (
                len(children) == 1
                and children[0][0] in WRAPPER_CHILDREN
                and not any(True for _ in mod.parameters(recurse=False))
            )
            if wrapper and children[0][0] == DDP_CHILD:
                self._wrappers.add(full)
            self._names[id(mod)] = (full, type(mod).__name__, not children, wrapper)

    def _hook_kwargs(self, root: torch.nn.Module) -> None:
        """The global forward pre-hook sees positional arguments only: a pre-hook on each module
        with `with_kwargs=True` records keyword-argument tensors (`model(input_ids=x)`), right
        after the global hook and before the call runs."""
        if self.level == "op":
            return
        hook = self._nocompile(self._kw_hook)
        for mod in root.modules():
            if id(mod) in self._kw_hooked:
                continue
            self._kw_hooked.add(id(mod))
            try:
                self._handles.append(mod.register_forward_pre_hook(hook, with_kwargs=True))
            except RuntimeError:  # a ScriptModule takes no hooks ("not supported on ScriptModules")
                pass

    def _hook_params(self, prefix: str, root: torch.nn.Module) -> None:
        """With param_grads: record each parameter's .grad once autograd has accumulated it."""
        if not self.param_grads or self.level == "op":
            return
        for pname, param in root.named_parameters():
            full = f"{prefix}.{pname}" if prefix else pname
            if not param.requires_grad or (self._filter is not None and not self._filter.search(full)):
                continue
            self._handles.append(param.register_post_accumulate_grad_hook(self._param_hook(full)))

    def _param_hook(self, name: str) -> Callable[[torch.Tensor], None]:
        def hook(param: torch.Tensor) -> None:
            if not self._active or self._closed or param.grad is None:
                return
            call = self._param_calls.get(name, 0)
            self._param_calls[name] = call + 1
            was, self._busy = self._busy, True
            try:
                self._record(name, "Parameter", True, "backward", call, "grad", 0, param.grad)
            finally:
                self._busy = was

        return hook

    # ---- hooks -----------------------------------------------------------------------------

    def _pre_hook(self, module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        info = self._names.get(id(module))
        if info is None:
            if not (self._discover and not self._stack and self._active):
                return
            self._add_root(module)
            self._hook_params(*self._roots[-1])
            self._hook_kwargs(module)  # from its next call on; this call's kwargs: _post_hook
            info = self._names[id(module)]
        if not self._stack:
            # Steps end at optimizer.step(); until one has happened (inference, or the first
            # step), a new call of the first top-level module (the model, not the loss) starts one.
            if module is self._roots[0][1]:
                if self._opt_steps == 0:
                    self._step = self._root_calls
                self._root_calls += 1
            if self.steps is not None and self._step >= self.steps:
                self._active = False
        name, typ, leaf, wrapper = info
        if torch._C._current_autograd_node() is not None:
            # A forward call made by the backward pass: activation checkpointing recomputing a
            # region. It repeats calls already recorded, so it is neither counted nor recorded.
            self._stack.append([id(module), name, -1, 0, False])
            return
        key = (name, "forward")
        call = self._calls.get(key, 0)
        self._calls[key] = call + 1
        entry: list[Any] = [id(module), name, call, 0, False]
        self._stack.append(entry)
        if not self._records_call(info, call):
            return
        tensors = [x for x in tree_leaves(args) if isinstance(x, torch.Tensor)]
        entry[3] = len(tensors)
        self._record_inputs(info, call, tensors, 0)

    def _records_call(self, info: tuple[str, str, bool, bool], call: int) -> bool:
        """Whether this module call's tensors are recorded."""
        if call < 0 or not self._active or info[3] or self.level == "op" or self._busy:
            return False
        return self._filter is None or bool(self._filter.search(info[0]))

    def _record_inputs(
        self,
        info: tuple[str, str, bool, bool],
        call: int,
        tensors: list[torch.Tensor],
        first_slot: int,
        kwargs: Optional[list[str]] = None,
    ) -> None:
        name, typ, leaf, _ = info
        self._busy = True
        try:
            grad = torch.is_grad_enabled()
            for i, t in enumerate(tensors):
                slot = first_slot + i
                self._record(
                    name, typ, leaf, "forward", call, "in", slot, t, kwarg=kwargs[i] if kwargs else None
                )
                if grad and t.requires_grad:
                    self._on_grad(t, name, typ, leaf, call, "out", slot)
        finally:
            self._busy = False

    def _kwarg_tensors(
        self, module: torch.nn.Module, kwargs: dict[str, Any]
    ) -> tuple[list[torch.Tensor], list[str]]:
        """Keyword-argument tensors in the order of forward()'s parameters (as if they had been
        passed by position, so `m(x, mask)` and `m(mask=mask, x=x)` align), others (**kwargs) by
        name; with the argument each came from."""
        order = _param_order(module)
        tensors: list[torch.Tensor] = []
        names: list[str] = []
        for k in sorted(kwargs, key=lambda k: (order.get(k, len(order)), k)):
            for x in tree_leaves(kwargs[k]):
                if isinstance(x, torch.Tensor):
                    tensors.append(x)
                    names.append(k)
        return tensors, names

    def _kw_hook(self, module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if not kwargs or not self._stack or self._stack[-1][0] != id(module):
            return
        entry = self._stack[-1]
        entry[4] = True
        info = self._names[id(module)]
        if not self._records_call(info, entry[2]):
            return
        tensors, names = self._kwarg_tensors(module, kwargs)
        if tensors:
            self._record_inputs(info, entry[2], tensors, entry[3], names)

    def _post_hook(self, module: torch.nn.Module, args: tuple[Any, ...], *rest: Any) -> None:
        # (kwargs, output); but when forward raised, torch 2.13 calls an always_call global hook
        # without the kwargs even if it asked for them: (output,), the output being None.
        kwargs: dict[str, Any] = rest[0] if len(rest) == 2 else {}
        output = rest[-1]
        if not self._stack or self._stack[-1][0] != id(module):
            return
        _, name, call, npos, kw_seen = self._stack.pop()
        info = self._names[id(module)]
        if not self._records_call(info, call):
            return
        if kwargs and not kw_seen:
            # The first call of a top-level module found in script mode: its keyword-argument
            # hook did not exist yet when the call started.
            tensors, names = self._kwarg_tensors(module, kwargs)
            if tensors:
                self._record_inputs(info, call, tensors, npos, names)
        self._busy = True
        try:
            grad = torch.is_grad_enabled()
            for slot, t in enumerate(x for x in tree_leaves(output) if isinstance(x, torch.Tensor)):
                self._record(name, info[1], info[2], "forward", call, "out", slot, t)
                if grad and t.requires_grad:
                    self._on_grad(t, name, info[1], info[2], call, "in", slot)
        finally:
            self._busy = False

    def _on_grad(
        self, t: torch.Tensor, name: str, typ: str, leaf: bool, call: int, io: str, slot: int
    ) -> None:
        """Record the gradient of `t` when backward reaches it.

        One hook per tensor dispatches to every module that saw the tensor, newest first: the
        tensor is the output of module P and the input of the later module C, and in backward C
        hands the gradient to P, so C's record must come first.
        """
        cbs: Optional[list[Callable[[torch.Tensor], None]]] = getattr(t, "_torchport_probe_cbs", None)
        if (
            cbs is None
            or getattr(t, "_torchport_probe_owner", _dead)() is not self
            or getattr(t, "_torchport_probe_version", None) != t._version
        ):
            cbs = []
            try:
                t.register_hook(_GradDispatch(weakref.ref(self), cbs))
            except RuntimeError:
                return
            t._torchport_probe_cbs = cbs  # type: ignore[attr-defined]
            t._torchport_probe_owner = weakref.ref(self)  # type: ignore[attr-defined]
            t._torchport_probe_version = t._version  # type: ignore[attr-defined]

        def cb(g: torch.Tensor) -> None:
            if self._active and not self._closed:
                self._record(name, typ, leaf, "backward", call, io, slot, g)

        cbs.append(cb)

    def _opt_hook(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.step()

    def _after_step(self) -> None:
        self._flush()
        self._cache.clear()
        self._node_modules.clear()
        if self.steps is not None and self._step >= self.steps:
            self._active = False

    # ---- records ---------------------------------------------------------------------------

    def _record(
        self,
        name: str,
        typ: str,
        leaf: bool,
        direction: str,
        call: int,
        io: str,
        slot: int,
        t: torch.Tensor,
        module: Optional[str] = None,
        node: Optional[str] = None,
        kwarg: Optional[str] = None,
    ) -> None:
        seq = self._seq
        self._seq += 1
        dtype = _dtype_name(t.dtype)
        shape = list(t.shape)
        rec: dict[str, Any] = {
            "seq": seq,
            "name": name,
            "type": typ,
            "leaf": leaf,
            "dir": direction,
            "call": call,
            "io": io,
            "slot": slot,
            "step": self._step,
            "shape": shape,
            "dtype": dtype,
            "device": str(t.device),
            "numel": t.numel(),
        }
        if module is not None:
            rec["module"] = module
        if node is not None:
            rec["node"] = node
        if kwarg:
            rec["kwarg"] = kwarg
        if (
            t.numel() == 0
            or t.is_complex()
            or t.layout != torch.strided
            or t.is_quantized
            or t.device.type == "meta"
            or type(t) is not torch.Tensor
            and not isinstance(t, torch.nn.Parameter)
        ):
            # Fake tensors (torch.compile tracing), tensor subclasses, sparse, complex: the record
            # keeps shape and dtype; reading their data could fail or change the user's run.
            self._pending.append(rec)
            return
        key = id(t)
        hit = self._cache.get(key)
        if hit is not None and hit[0]() is t and hit[1] == t._version and not self.full_tensors:
            cached = hit[2]
            if isinstance(cached, torch.Tensor):
                self._pending_dev.append((rec, cached))
            else:
                rec.update(cached)
                self._note_nonfinite(rec)
            self._pending.append(rec)
            self._maybe_flush()
            return
        on_cpu = t.device.type == "cpu" and self._host_stats
        if on_cpu or self.full_tensors:
            host = t.detach() if on_cpu else t.detach().cpu()
            arr, stored_as = _host_view(host)
            values = _numpy_stats(host, arr, stored_as)
            stats: dict[str, Any] = {
                "min": encode_float(values[0]),
                "max": encode_float(values[1]),
                "mean": encode_float(values[2]),
                "norm": encode_float(values[3]),
                "nan": values[4],
                "inf": values[5],
                "hash": _crc(arr, dtype, shape),
            }
            if self.full_tensors:
                assert self._writer is not None
                path = self._writer.save_tensor(seq, arr, self.max_tensor_bytes)
                stats["tensor"] = path
                if stored_as:
                    stats["stored_as"] = stored_as
            rec.update(stats)
            self._note_nonfinite(rec)
            if not self.full_tensors:
                self._remember(t, stats)
        else:
            st = _device_stats(t)
            self._pending_dev.append((rec, st))
            self._remember(t, st)
        self._pending.append(rec)
        self._maybe_flush()

    def _remember(self, t: torch.Tensor, stats: Any) -> None:
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        try:
            self._cache[id(t)] = (weakref.ref(t), t._version, stats)
        except TypeError:
            pass

    def _note_nonfinite(self, rec: dict[str, Any]) -> None:
        if self.first_nonfinite is None and (rec.get("nan") or rec.get("inf")):
            self.first_nonfinite = {
                k: rec[k] for k in ("seq", "name", "dir", "call", "io", "slot", "nan", "inf")
            }

    def _maybe_flush(self) -> None:
        if len(self._pending) >= _FLUSH_EVERY:
            self._flush()

    def _flush(self) -> None:
        if self._pending_dev:
            was, self._busy = self._busy, True
            try:
                stacked = torch.stack([s for _, s in self._pending_dev]).cpu().tolist()
            finally:
                self._busy = was
            for (rec, _), v in zip(self._pending_dev, stacked):
                rec.update(
                    {
                        "min": encode_float(v[0]),
                        "max": encode_float(v[1]),
                        "mean": encode_float(v[2]),
                        "norm": encode_float(v[3]),
                        "nan": int(v[4]),
                        "inf": int(v[5]),
                    }
                )
            self._pending_dev.clear()
            for rec in self._pending:
                if self.first_nonfinite is None:
                    self._note_nonfinite(rec)
        if self._pending and self._writer is not None:
            self._writer.write_records(self._pending)
            self._pending = []

    # ---- op level --------------------------------------------------------------------------

    def _op_begin(
        self, func: Any, args: Any, kwargs: Any
    ) -> Optional[tuple[str, str, int, str, Optional[str]]]:
        """Record an op's inputs before it runs (an in-place op overwrites them)."""
        node = torch._C._current_autograd_node()
        if node is None:
            module = self._stack[-1][1] if self._stack else ""
            # Autograd creates an op's backward node (numbered from a per-thread counter) before
            # dispatching the op down to this mode, so the node of this op, if it has one, is the
            # last number handed out. The first op to claim a number is its owner: an op without
            # a node sees its predecessor's number, already claimed; the first op inside a custom
            # autograd Function's forward (run without grad) claims the Function's node.
            self._node_modules.setdefault(_sequence_nr() - 1, module)
        else:
            # Backward: the op runs for the node of a forward op; name the module that op ran in.
            module = self._node_modules.get(node._sequence_nr(), node.name())
        name = str(func)
        if name in _SKIP_OPS or getattr(func, "is_view", False):
            return None
        if self._filter is not None and not self._filter.search(name):
            return None
        direction = "backward" if node is not None else "forward"
        key = (name, direction)
        call = self._calls.get(key, 0)
        self._calls[key] = call + 1
        tensors_in = [x for x in tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
        node_name = node.name() if node is not None else None
        for slot, t in enumerate(tensors_in):
            self._record(name, "op", True, direction, call, "in", slot, t, module=module, node=node_name)
        return name, direction, call, module, node_name

    def _op_end(self, ctx: tuple[str, str, int, str, Optional[str]], out: Any) -> None:
        name, direction, call, module, node_name = ctx
        tensors_out = [x for x in tree_leaves(out) if isinstance(x, torch.Tensor)]
        for slot, t in enumerate(tensors_out):
            # Inside the dispatch mode an in-place op has not bumped the version counter yet,
            # so the cached statistics of its input must not be reused for its output.
            self._cache.pop(id(t), None)
            self._record(name, "op", True, direction, call, "out", slot, t, module=module, node=node_name)


def _mib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _dead() -> None:
    return None


_PARAM_ORDER: dict[Any, dict[str, int]] = {}


def _param_order(module: torch.nn.Module) -> dict[str, int]:
    """Position of each named parameter of `module.forward` (cached per forward function)."""
    fwd = module.forward
    key = getattr(fwd, "__func__", fwd)
    order = _PARAM_ORDER.get(key)
    if order is None:
        try:
            params = inspect.signature(fwd).parameters
            order = {n: i for i, n in enumerate(params)}
        except (TypeError, ValueError):
            order = {}
        if len(_PARAM_ORDER) < 4096:
            _PARAM_ORDER[key] = order
    return order


def _sequence_nr() -> int:
    return int(torch._C._autograd._get_sequence_nr())


class _BoundedDict(dict[int, str]):
    """A dict that forgets its oldest half when it grows past `limit` (forward without backward)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def setdefault(self, key: int, default: str) -> str:  # type: ignore[override]
        if len(self) >= self.limit and key not in self:
            for k in list(self)[: self.limit // 2]:
                del self[k]
        return super().setdefault(key, default)


class _GradDispatch:
    """The single hook on a tensor: runs its callbacks newest first; never changes the gradient."""

    def __init__(self, probe: Any, cbs: list[Callable[[torch.Tensor], None]]) -> None:
        self.probe = probe
        self.cbs = cbs

    def __call__(self, g: torch.Tensor) -> None:
        p = self.probe()
        if p is None or p._closed or p._busy:
            return None
        p._busy = True
        try:
            for cb in reversed(self.cbs):
                cb(g)
        finally:
            p._busy = False
        return None


def _make_dispatch_mode(probe: Probe) -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    class _ProbeMode(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if not probe._active or probe._busy:
                return func(*args, **kwargs)
            probe._busy = True
            try:
                ctx = probe._op_begin(func, args, kwargs)
            finally:
                probe._busy = False
            out = func(*args, **kwargs)
            if ctx is not None:
                probe._busy = True
                try:
                    probe._op_end(ctx, out)
                finally:
                    probe._busy = False
            return out

    return _ProbeMode()


def probe(
    model: Optional[torch.nn.Module] = None,
    out: os.PathLike | str = "probe_dump",
    level: str = "module",
    **kwargs: Any,
) -> Probe:
    """``with torchport.probe(model, out="dump", level="module"):`` records a dump of the run."""
    return Probe(model, out=out, level=level, **kwargs)
