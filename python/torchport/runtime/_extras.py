"""The rest of the CUDA surface (issue 22 §4): storages, lazy modules, pinned-memory queries, torch.cuda.nccl,
torch.cuda.profiler, torch.backends.cuda, emit_nvtx, and the refusal of every torch.cuda name that nothing
else serves, so that no CUDA original is left in place silently (data/runtime/coverage.json says which)."""

from __future__ import annotations

import contextlib
import functools
import json
from typing import Any, Callable

import torch

from torchport.runtime._log import CALL, MATCH, MISMATCH, MODIFIED
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
    _refuse_the_rest(s)


def _install_storages(s: Session) -> None:
    p = s.patcher
    mapf = s.mapper.map
    hit = s.log.hit
    dst = s.mapper.device

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

    # torch.cuda.FloatStorage(4) & co.: a typed storage of that dtype on the target
    for name, dtype in STORAGES.items():
        if not hasattr(torch.cuda, name):
            continue
        api = f"torch.cuda.{name}"

        def make(*a: Any, _api: str = api, _dtype: torch.dtype = dtype, **k: Any) -> Any:
            if _dtype in (torch.float64, torch.complex128) and not s.target.float64:
                s.float64(_api)
            hit(
                _api,
                (CALL, _api, a, k),
                f"torch.TypedStorage(..., dtype={_dtype}, device={str(dst)!r})",
                MATCH,
            )
            return torch.TypedStorage(*a, dtype=_dtype, device=dst, **k)

        make.__name__ = make.__qualname__ = name
        p.set(torch.cuda, name, make)


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


__all__ = ["STORAGES", "coverage_rows", "install", "refuser"]
