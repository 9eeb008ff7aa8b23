"""The rest of the CUDA surface (issue 22 §4): storages, lazy modules, pinned-memory queries, torch.cuda.nccl,
torch.cuda.profiler, torch.backends.cuda, emit_nvtx, and the refusal of every torch.cuda name that nothing
else serves, so that no CUDA original is left in place silently (data/runtime/coverage.json says which)."""

from __future__ import annotations

import contextlib
import functools
import json
from typing import Any, Callable

import torch

from torchport.runtime._log import CALL, MATCH, MISMATCH, MODIFIED, VALUE
from torchport.runtime._session import Session

STORAGES: dict[str, torch.dtype] = {
    "FloatStorage": torch.float32,
    "DoubleStorage": torch.float64,
    "HalfStorage": torch.float16,
    "BFloat16Storage": torch.bfloat16,
    "ByteStorage": torch.uint8,
    "CharStorage": torch.int8,
    "ShortStorage": torch.int16,
    "IntStorage": torch.int32,
    "LongStorage": torch.int64,
    "BoolStorage": torch.bool,
    "ComplexFloatStorage": torch.complex64,
    "ComplexDoubleStorage": torch.complex128,
}


def coverage_rows() -> list[dict[str, Any]]:
    from torchport.runtime._callers import data_path

    with open(data_path("coverage.json"), encoding="utf-8") as f:
        rows: list[dict[str, Any]] = json.load(f)["rows"]
    return rows


def refuser(s: Session, api: str, why: str) -> Callable[..., Any]:
    """A call that cannot be served: a clear error naming the target and the call, logged `mismatch`."""
    target = s.target.name
    hit = s.log.hit

    def refused(*a: Any, **k: Any) -> Any:
        hit(api, (CALL, api, a, k), "error", MISMATCH, why)
        raise NotImplementedError(f"{api} has no equivalent on target {target}: {why} [torchport]")

    refused.__name__ = api.rsplit(".", 1)[-1]
    refused.__qualname__ = refused.__name__
    return refused


def install(s: Session) -> None:
    _install_storages(s)
    _install_lazy(s)
    _install_pinned(s)
    _install_nccl_profiler(s)
    _install_backends(s)
    _install_emit_nvtx(s)
    _install_memory_history(s)
    _refuse_the_rest(s)
    _alias_submodules(s)
    s.when_imported("torch.cuda.comm", lambda mod: _install_comm(s, mod))


def _install_storages(s: Session) -> None:
    p = s.patcher
    mapf = s.mapper.map
    hit = s.log.hit

    # torch.UntypedStorage(n, device="cuda") and torch.TypedStorage(..., device="cuda")
    for cls in (torch.UntypedStorage, torch.TypedStorage):
        orig_new = cls.__new__
        api = f"torch.{cls.__name__}"

        def new(klass: Any, *a: Any, _orig: Any = orig_new, _api: str = api, **k: Any) -> Any:
            d = k.get("device")
            if d is not None:
                nd = mapf(d)
                if nd is not d:
                    hit(_api, ("device", d), ("device", nd), None)
                    k["device"] = nd
            return _orig(klass, *a, **k)

        p.set(cls, "__new__", staticmethod(new))

    # torch.cuda.FloatStorage(4) & co.: a typed storage of that dtype on the target. They stay classes:
    # isinstance(x.storage(), torch.cuda.FloatStorage) follows Tensor.is_cuda (below).
    sees_target = _storage_sees_target(s)
    for name, dtype in STORAGES.items():
        orig_cls = getattr(torch.cuda, name, None)
        if not isinstance(orig_cls, type):
            continue
        p.set(torch.cuda, name, _typed_storage_class(s, name, dtype, orig_cls, sees_target))

    # x.storage().is_cuda / x.untyped_storage().is_cuda agree with x.is_cuda (--cuda-available)
    if s.cuda_available != "truth":
        log = s.log
        target_type = s.target.device_type
        why = f"answers for {target_type} (--cuda-available={s.cuda_available}), as Tensor.is_cuda"
        for cls in (torch.UntypedStorage, torch.TypedStorage):
            orig_prop = cls.__dict__.get("is_cuda")
            if not isinstance(orig_prop, property):
                continue
            api = f"{cls.__name__}.is_cuda"

            def is_cuda(self: Any, _orig: property = orig_prop, _api: str = api) -> bool:
                if s.live and self.device.type == target_type and sees_target(1):
                    log.hit(_api, _api, f"True (the storage is on {target_type})", MODIFIED, why)
                    return True
                return bool(_orig.__get__(self))

            p.set(cls, "is_cuda", property(is_cuda, doc=orig_prop.__doc__))


def _storage_sees_target(s: Session) -> Callable[[int], bool]:
    """Whether a storage question answers for the target, for the caller `depth` frames above the asking
    function: Tensor.is_cuda's rule (False in --cuda-available=truth)."""
    if s.cuda_available == "truth" or s.target.device_type == "cuda":
        return lambda depth: False
    from torchport.runtime._callers import CallerPolicy

    policy = CallerPolicy(s.cuda_available, s.target.name)

    def sees(depth: int) -> bool:
        return policy.sees_target(depth + 1)

    return sees


def _typed_storage_class(
    s: Session, name: str, dtype: torch.dtype, orig_cls: type, sees_target: Callable[[int], bool]
) -> type:
    """torch.cuda.<name> (FloatStorage, ...) as a class. Calling it gives a TypedStorage of that dtype on the
    target (logged); isinstance(st, it) is True for a storage of that dtype on CUDA, or on the target when
    Tensor.is_cuda answers True for the target (--cuda-available target/user; in truth mode False, as plain
    CPU torch answers); issubclass sees torch's class."""
    api = f"torch.cuda.{name}"
    hit = s.log.hit
    dst = s.mapper.device
    target_type = s.target.device_type
    fp64 = dtype in (torch.float64, torch.complex128)

    class _Meta(type(orig_cls)):  # type: ignore[misc]
        def __instancecheck__(cls, obj: Any) -> bool:
            if cls is not proxy:
                return bool(super().__instancecheck__(obj))
            if not isinstance(obj, torch.TypedStorage) or obj.dtype != dtype:
                return False
            kind = obj.device.type
            if kind == "cuda":
                return True
            if s.live and kind == target_type and sees_target(1):
                hit(
                    f"isinstance({api})",
                    f"isinstance(<storage on {target_type}>, {api})",
                    "True",
                    MODIFIED,
                    f"answers for {target_type} (--cuda-available={s.cuda_available}), as Tensor.is_cuda",
                )
                return True
            return False

        def __subclasscheck__(cls, sub: type) -> bool:
            if cls is not proxy:
                return bool(super().__subclasscheck__(sub))
            return sub is cls or issubclass(sub, orig_cls)

        def __call__(cls, *a: Any, **k: Any) -> Any:
            if cls is not proxy or not s.live:
                return orig_cls(*a, **k)
            if fp64 and not s.target.float64:
                s.float64(api)
            hit(
                api,
                (CALL, api, a, k),
                f"torch.TypedStorage(..., dtype={dtype}, device={str(dst)!r})",
                MATCH,
            )
            return torch.TypedStorage(*a, dtype=dtype, device=dst, **k)

    proxy = _Meta(name, (orig_cls,), {"__module__": "torch.cuda", "__doc__": orig_cls.__doc__})
    proxy.__qualname__ = name
    return proxy


def _install_lazy(s: Session) -> None:
    """nn.LazyLinear(3).cuda(): UninitializedParameter only lets the methods in `_allowed_methods` through
    __torch_function__; the redirected Tensor.to/.cuda are new objects, so add them (transfer_to_npu does the
    same, PEERS §2 item 10)."""
    from torch.nn.parameter import UninitializedTensorMixin

    allowed = list(UninitializedTensorMixin._allowed_methods)
    for name in ("to", "cuda", "double", "type", "pin_memory"):
        fn = torch.Tensor.__dict__.get(name)
        if fn is not None and fn not in allowed:
            allowed.append(fn)
    s.patcher.set(UninitializedTensorMixin, "_allowed_methods", allowed)


def _install_pinned(s: Session) -> None:
    p = s.patcher
    mapf = s.mapper.map
    hit = s.log.hit
    orig_is_pinned = torch.Tensor.is_pinned

    def is_pinned(self: torch.Tensor, device: Any = None) -> bool:
        if device is None:
            return orig_is_pinned(self)
        nd = mapf(device)
        if s.is_cpu and nd is not device:
            hit("Tensor.is_pinned", ("device", device), "False", MODIFIED, "cpu has no pinned memory")
            return False
        if nd is not device:
            hit("Tensor.is_pinned", ("device", device), ("device", nd), None)
        return orig_is_pinned(self, nd)

    p.set(torch.Tensor, "is_pinned", is_pinned)

    orig_pin = getattr(torch, "_pin_memory", None)
    if orig_pin is not None:

        def _pin_memory(t: torch.Tensor, device: Any = None) -> torch.Tensor:
            nd = mapf(device) if device is not None else None
            if s.is_cpu:
                hit(
                    "torch._pin_memory",
                    "torch._pin_memory()",
                    "the tensor",
                    MODIFIED,
                    "cpu has no pinned memory",
                )
                return t
            if nd is not device:
                hit("torch._pin_memory", ("device", device), ("device", nd), None)
            return orig_pin(t, nd) if nd is not None else orig_pin(t)

        p.set(torch, "_pin_memory", _pin_memory)


class _HostProfilerRange(contextlib.ContextDecorator):
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _install_nccl_profiler(s: Session) -> None:
    p = s.patcher
    log = s.log
    dev = s.devmod
    dst = s.target.device_type
    import torch.cuda.nccl as nccl
    import torch.cuda.profiler as cprof

    # torch.cuda.nccl: the target's own single-process library when its device module has one
    # (torch.mlu.cncl),
    # else is_available answers False and the collectives are refused (torch.distributed serves them)
    own = None
    for cand in ("cncl", "hccl", "mccl", "nccl"):
        own = getattr(dev, cand, None) if not s.is_cpu else None
        if own is not None:
            break
    why = (
        f"{dst} has no single-process NCCL library; use torch.distributed with the {s.target.backend} backend"
    )
    for name in ("all_reduce", "reduce", "broadcast", "all_gather", "reduce_scatter", "version", "unique_id"):
        if not hasattr(nccl, name):
            continue
        impl = getattr(own, name, None) if own is not None else None
        p.set(nccl, name, impl if impl is not None else refuser(s, f"torch.cuda.nccl.{name}", why))

    def nccl_is_available(tensors: Any = None) -> bool:
        if own is not None and hasattr(own, "is_available"):
            return bool(own.is_available(tensors))
        log.hit("torch.cuda.nccl.is_available", "torch.cuda.nccl.is_available()", "False", MATCH, why)
        return False

    p.set(nccl, "is_available", nccl_is_available)

    # torch.cuda.profiler: cudaProfilerStart/Stop; torch.profiler records the target instead
    pwhy = f"no CUDA profiler on {dst}: a no-op (torch.profiler records {dst})"
    for name in ("start", "stop"):

        def noop(_name: str = name) -> None:
            log.hit(
                f"torch.cuda.profiler.{_name}", f"torch.cuda.profiler.{_name}()", "nothing", MODIFIED, pwhy
            )

        noop.__name__ = name
        p.set(cprof, name, noop)

    def profile() -> Any:
        log.hit("torch.cuda.profiler.profile", "torch.cuda.profiler.profile()", "nothing", MODIFIED, pwhy)
        return _HostProfilerRange()

    p.set(cprof, "profile", profile)
    p.set(
        cprof, "cudart", refuser(s, "torch.cuda.profiler.cudart", f"the CUDA runtime does not exist on {dst}")
    )


def _install_backends(s: Session) -> None:
    """torch.backends.cuda.matmul -> torch.backends.<target>.matmul when the target has one (torch_mlu's
    gpu_migration maps torch.backends.cuda to torch.backends.mlu, PEERS §3.1). The SDPA switches are global
    flags that torch's other scaled_dot_product_attention kernels read too: they stay."""
    import torch.backends.cuda as bc

    # cufft_plan_cache[.max_size / .size / .clear()] raises without CUDA: an empty cache instead
    s.patcher.set(bc, "cufft_plan_cache", _NoPlanCache())
    own = getattr(torch.backends, s.target.device_type, None)
    matmul = getattr(own, "matmul", None) if own is not None else None
    if matmul is None or s.is_cpu:
        return
    s.patcher.set(bc, "matmul", matmul)
    s.log.note(f"torch.backends.cuda.matmul -> torch.backends.{s.target.device_type}.matmul")


class _NoPlanCache:
    """torch.backends.cuda.cufft_plan_cache where there is no cuFFT: nothing is cached."""

    size = 0
    max_size = 0

    def __getitem__(self, device: Any) -> _NoPlanCache:
        return self

    def clear(self) -> None:
        return None


class _NoNvtx(contextlib.ContextDecorator):
    """torch.autograd.profiler.emit_nvtx where there is no NVTX: nothing to emit."""

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled = enabled

    def __enter__(self) -> _NoNvtx:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _install_emit_nvtx(s: Session) -> None:
    import torch.autograd.profiler as ap

    orig = getattr(ap, "emit_nvtx", None)
    if orig is None:
        return
    log = s.log
    why = f"no NVTX on {s.target.device_type}: nothing is emitted (torch.profiler records the target)"

    class emit_nvtx(_NoNvtx):
        def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
            log.hit("emit_nvtx", "torch.autograd.profiler.emit_nvtx()", "nothing", MODIFIED, why)
            super().__init__(enabled, record_shapes)

    s.patcher.set(ap, "emit_nvtx", emit_nvtx)
    import torch.autograd as ag

    if getattr(ag, "emit_nvtx", None) is orig:
        s.patcher.set(ag, "emit_nvtx", emit_nvtx)


def _refuse_the_rest(s: Session) -> None:
    """Every torch.cuda name that coverage.json marks `refused` and nothing else patched: the device module's
    function of the same name on a target that has one, else a clear error (logged mismatch)."""
    patched = {name for owner, name, _ in s.patcher.records if owner is torch.cuda}
    dev = s.devmod
    for row in coverage_rows():
        api = row["api"]
        if not api.startswith("torch.cuda.") or not row["cpu"].startswith("refused"):
            continue
        path = api[len("torch.cuda.") :].split(".")
        owner: Any = torch.cuda
        for part in path[:-1]:
            owner = getattr(owner, part, None)
        name = path[-1]
        if owner is None or not hasattr(owner, name) or (owner is torch.cuda and name in patched):
            continue
        if owner is not torch.cuda and any(o is owner and n == name for o, n, _ in s.patcher.records):
            continue
        impl = getattr(dev, name, None) if (not s.is_cpu and owner is torch.cuda) else None
        if impl is not None:
            s.patcher.set(owner, name, _same_name(s, api, impl, f"{s.target.device_module}.{name}"))
        else:
            why = row["cpu"].split(":", 1)[1].strip()
            s.patcher.set(owner, name, refuser(s, api, why))


def _same_name(s: Session, api: str, impl: Any, shown: str) -> Any:
    hit = s.log.hit

    @functools.wraps(impl)
    def call(*a: Any, **k: Any) -> Any:
        hit(api, (CALL, api, a, k), (CALL, shown, a, k), MATCH)
        return impl(*a, **k)

    return call


# torch.cuda's submodules whose names torch.cuda re-exports (`from .memory import *`, ...): a script may call
# either path (torch.cuda.random.manual_seed, torch.cuda.streams.Stream, torch.cuda.memory.memory_allocated).
SUBMODULES: tuple[str, ...] = ("random", "memory", "streams", "graphs", "nvtx")


def _alias_submodules(s: Session) -> None:
    """Every torch.cuda.<sub>.<name> that is the very object torch.cuda.<name> was before enable() gets the
    same replacement: both paths answer alike and log alike (issue 33: torch.cuda.random.manual_seed reached
    torch._C._cuda_getDevice; on the npu rehearsal torch.cuda.memory.memory_allocated() was 0 while
    torch.cuda.memory_allocated() was 4 MiB)."""
    import importlib

    p = s.patcher
    replaced = [(name, before) for owner, name, before in p.records if owner is torch.cuda]
    for subname in SUBMODULES:
        try:
            sub = importlib.import_module(f"torch.cuda.{subname}")
        except ImportError:
            continue
        for name, before in replaced:
            if sub.__dict__.get(name, None) is before and before is not None:
                p.set(sub, name, getattr(torch.cuda, name))


def _empty_snapshot() -> dict[str, Any]:
    return {"segments": [], "device_traces": [[]], "allocator_settings": {}}


def _install_memory_history(s: Session) -> None:
    """torch.cuda.memory._record_memory_history / _snapshot / _dump_snapshot (the recipe of PyTorch's
    "Understanding CUDA Memory Usage" page): the device module's own where it has them (torch_npu), else the
    history is not recorded (no device caching allocator to record) and the snapshot is empty, logged
    mismatch."""
    import pickle

    import torch.cuda.memory as cmem

    own = getattr(s.devmod, "memory", None) if not s.is_cpu else None
    dst = s.target.device_type
    hit = s.log.hit
    why = f"{dst} has no device caching allocator: no allocation history is recorded, the snapshot is empty"

    def record(*a: Any, **k: Any) -> None:
        hit(
            "torch.cuda.memory._record_memory_history",
            (CALL, "torch.cuda.memory._record_memory_history", a, k),
            "nothing recorded",
            MISMATCH,
            why,
        )

    def snapshot(*a: Any, **k: Any) -> dict[str, Any]:
        hit(
            "torch.cuda.memory._snapshot",
            (CALL, "torch.cuda.memory._snapshot", a, k),
            "{'segments': [], ...}",
            MISMATCH,
            why,
        )
        return _empty_snapshot()

    def dump(filename: Any = "dump_snapshot.pickle", *a: Any, **k: Any) -> None:
        hit(
            "torch.cuda.memory._dump_snapshot",
            (CALL, "torch.cuda.memory._dump_snapshot", (filename, *a), k),
            "an empty snapshot written",
            MISMATCH,
            why,
        )
        with open(filename, "wb") as f:
            pickle.dump(_empty_snapshot(), f)

    for name, emul in (("_record_memory_history", record), ("_snapshot", snapshot), ("_dump_snapshot", dump)):
        if not hasattr(cmem, name):
            continue
        impl = getattr(own, name, None) if own is not None else None
        shown = f"{s.target.device_module}.memory.{name}"
        s.patcher.set(cmem, name, _same_name(s, f"torch.cuda.memory.{name}", impl, shown) if impl else emul)


def _install_comm(s: Session, comm: Any) -> None:
    """torch.cuda.comm (single-process copies between GPUs: broadcast, scatter, gather, reduce_add): served
    with Tensor.to on every target, devices mapped (on a one-device target every copy lands on that device);
    torch's own versions call CUDA-only kernels (torch._C._broadcast, ...)."""
    mapf = s.mapper.map
    hit = s.log.hit
    dst = s.target.device_type
    why = f"copies made with Tensor.to on {dst} (no NCCL); torch.cuda.comm's result shapes"

    def dev(d: Any) -> Any:
        if d is None:
            return s.mapper.device
        if isinstance(d, int) and not isinstance(d, bool):
            return s.mapper.torch_device(d)
        return mapf(d)

    def log(name: str, a: tuple[Any, ...], k: dict[str, Any], out: Any) -> None:
        hit(
            f"torch.cuda.comm.{name}", (CALL, f"torch.cuda.comm.{name}", a, k), (VALUE, out), MODIFIED, why, 3
        )

    def broadcast(tensor: torch.Tensor, devices: Any = None, *, out: Any = None) -> Any:
        # torch's own answers lists here (torch._C._broadcast / _broadcast_out / _broadcast_coalesced return
        # list[Tensor] / list[list[Tensor]] in torch/_C/__init__.pyi), tuples from scatter and
        # reduce_add_coalesced (torch/nn/parallel/comm.py wraps those in tuple())
        if out is not None:
            for o in out:
                o.copy_(tensor)
            res = list(out)
        else:
            res = [tensor.to(dev(d), copy=True) for d in devices]
        log("broadcast", (tensor, devices), {"out": out} if out is not None else {}, res)
        return res

    def broadcast_coalesced(tensors: Any, devices: Any, buffer_size: int = 10485760) -> Any:
        res = [[t.to(dev(d), copy=True) for t in tensors] for d in devices]
        log("broadcast_coalesced", (tensors, devices), {}, res)
        return res

    def reduce_add(inputs: Any, destination: Any = None) -> torch.Tensor:
        target = dev(destination)
        res = inputs[0].to(target, copy=True)
        for t in inputs[1:]:
            if t.shape != res.shape:
                raise ValueError(f"input {tuple(t.shape)} does not match the first input {tuple(res.shape)}")
            res.add_(t.to(target))
        log("reduce_add", (inputs, destination), {}, res)
        return res

    def reduce_add_coalesced(inputs: Any, destination: Any = None, buffer_size: int = 10485760) -> Any:
        res = tuple(reduce_add(list(col), destination) for col in zip(*inputs))
        return res

    def scatter(
        tensor: torch.Tensor,
        devices: Any = None,
        chunk_sizes: Any = None,
        dim: int = 0,
        streams: Any = None,
        *,
        out: Any = None,
    ) -> Any:
        if out is not None:
            sizes = [o.shape[dim] for o in out]
            for o, c in zip(out, tensor.split(sizes, dim)):
                o.copy_(c)
            res = tuple(out)
        else:
            chunks = tensor.split(list(chunk_sizes), dim) if chunk_sizes else tensor.chunk(len(devices), dim)
            res = tuple(c.to(dev(d)) for c, d in zip(chunks, devices))
        log("scatter", (tensor, devices), {"dim": dim} if dim else {}, res)
        return res

    def gather(tensors: Any, dim: int = 0, destination: Any = None, *, out: Any = None) -> torch.Tensor:
        if out is not None:
            res = torch.cat([t.to(out.device) for t in tensors], dim, out=out)
        else:
            target = torch.device("cpu") if destination == -1 else dev(destination)
            res = torch.cat([t.to(target) for t in tensors], dim)
        log("gather", (tensors,), {"dim": dim} if dim else {}, res)
        return res

    for fn in (broadcast, broadcast_coalesced, reduce_add, reduce_add_coalesced, scatter, gather):
        if hasattr(comm, fn.__name__):
            s.patcher.set(comm, fn.__name__, fn)


__all__ = ["STORAGES", "coverage_rows", "install", "refuser"]
