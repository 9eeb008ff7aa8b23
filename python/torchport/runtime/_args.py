"""Device arguments: factories, Tensor/Module methods, nn layers, Generator, default device, DDP/FSDP, device
mesh, torch.load and DataLoader."""

from __future__ import annotations

import functools
import inspect
import itertools
import sys
from typing import Any, Callable

import torch

from torchport.runtime._devices import TORCH_DEVICE
from torchport.runtime._log import CALL, MATCH, MISMATCH, MODIFIED, VALUE, render_arg
from torchport.runtime._session import Session

_FP64 = (torch.float64, torch.complex128)

# The hot paths in C (src/speedups/_speedups.c, built into the wheel); a source checkout without it runs the
# same logic in Python (tests/python/test_runtime_speedups.py checks that both agree).
SPEEDUPS: Any
try:
    import torchport.runtime._speedups as SPEEDUPS  # type: ignore[no-redef]
except ImportError:
    SPEEDUPS = None

# torch.* functions that take `device=`. Source: PEERS §2 (transfer_to_npu `_wrapper_cuda` list) ∪ §3.1
# (torch_mlu gpu_migration) ∪ the installed torch's factory functions. Names missing from a torch version are
# skipped.
FACTORIES: tuple[str, ...] = (
    "arange",
    "as_tensor",
    "asarray",
    "bartlett_window",
    "blackman_window",
    "empty",
    "empty_like",
    "empty_permuted",
    "empty_quantized",
    "empty_strided",
    "eye",
    "from_file",
    "frombuffer",
    "full",
    "full_like",
    "hamming_window",
    "hann_window",
    "kaiser_window",
    "linspace",
    "logspace",
    "normal",
    "ones",
    "ones_like",
    "rand",
    "rand_like",
    "randint",
    "randint_like",
    "randn",
    "randn_like",
    "randperm",
    "range",
    "scalar_tensor",
    "sparse_bsc_tensor",
    "sparse_bsr_tensor",
    "sparse_compressed_tensor",
    "sparse_coo_tensor",
    "sparse_csc_tensor",
    "sparse_csr_tensor",
    "tensor",
    "tril_indices",
    "triu_indices",
    "zeros",
    "zeros_like",
    # the private quantized and nested factories that take `device=` (issue 33): the installed torch's aten
    # schemas with a `Device? device` argument (`empty_quantized` is above)
    "_empty_affine_quantized",
    "_empty_per_channel_affine_quantized",
    "_nested_tensor_from_tensor_list",
)
TENSOR_NEW: tuple[str, ...] = (
    "new_empty",
    "new_empty_strided",
    "new_full",
    "new_ones",
    "new_tensor",
    "new_zeros",
)


def fp64_on(obj: Any, dst: str) -> bool:
    """True when `obj` (a tensor, or a module's parameters and buffers) holds float64 on device type `dst`."""
    if isinstance(obj, torch.Tensor):
        return obj.dtype in _FP64 and obj.device.type == dst
    if isinstance(obj, torch.nn.Module):
        for t in itertools.chain(obj.parameters(), obj.buffers()):
            if t.dtype in _FP64 and t.device.type == dst:
                return True
    return False


_ABSENT: Any = object()  # no `device=` in the call


def _kw_device(s: Session, fn: Callable[..., Any], api: str) -> Callable[..., Any]:
    """The wrapper of a function whose device is the keyword `device=` (factories, Tensor.new_*, nn layers).

    `device` is a keyword-only parameter of the wrapper, so Python's own argument binding finds it (no
    `kwargs.get`), and the original is called without `**kwargs` when there are none: `fn(*args, **{})` costs
    more than the rest of the wrapper (bench/runtime_bench.py)."""
    mapf = s.mapper.map
    hit = s.log.hit
    # float64 is checked only on targets without it (npu, mps): on the others the hot path does not change.
    # The result is checked, not the dtype argument: float64 also comes from torch.get_default_dtype() and
    # from numpy float64 data.
    check64 = not s.target.float64
    fp64 = s.float64
    dst = s.target.device_type

    cache_get = s.mapper._cache.get
    sites_get = s.log.sites.get
    getframe = sys._getframe
    track = s.log.track
    absent = _ABSENT
    str_t = str

    cache = s.mapper._cache

    # every case: a device to map, a call site to log, a float64 result to check
    def wrapper(*args: Any, device: Any = absent, **kwargs: Any) -> Any:
        if device is not absent:
            if device is not None:
                nd = cache_get(device) if type(device) is str_t else None
                if nd is None:
                    nd = mapf(device)
                if track and nd is not device and nd != device:  # equal strings may be distinct objects
                    f = getframe(1)
                    site = sites_get((f.f_code, f.f_lineno, api))
                    if site is None:
                        hit(api, ("device", device), ("device", nd), None)
                    else:
                        site.count += 1
                device = nd
            kwargs["device"] = device
        out = fn(*args, **kwargs)
        # nn layer constructors return None: check the module they built
        if check64 and fp64_on(out if out is not None or not args else args[0], dst):
            fp64(api)
        return out

    if track or check64:
        return _wraps(wrapper, fn)
    general = wrapper

    # nothing logged or checked: no device, or a device string already mapped, is served here and kept flat
    def fast(*args: Any, device: Any = absent, **kwargs: Any) -> Any:
        if device is absent:
            return fn(*args, **kwargs) if kwargs else fn(*args)
        if type(device) is str_t:
            try:
                nd = cache[device]
            except KeyError:
                return general(*args, device=device, **kwargs)
            return fn(*args, device=nd, **kwargs) if kwargs else fn(*args, device=nd)
        return general(*args, device=device, **kwargs)

    return _wraps(fast, fn)


def _wraps(wrapper: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    """functools.wraps without copying __dict__ (it is 10x slower and enable() wraps ~100 functions)."""
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, attr, getattr(fn, attr))
        except (AttributeError, TypeError):
            pass
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def _to_wrapper(s: Session, fn: Callable[..., Any], api: str, is_tensor: bool) -> Callable[..., Any]:
    mapf = s.mapper.map
    hit = s.log.hit
    check64 = not s.target.float64  # tensors and modules: float64 arriving on the target
    dst = s.target.device_type
    fp64 = s.float64

    cache_get = s.mapper._cache.get
    sites_get = s.log.sites.get
    getframe = sys._getframe
    track = s.log.track
    dtype_t = torch.dtype

    absent = _ABSENT
    str_t = str
    cache = s.mapper._cache

    # The first argument is a parameter of its own (Python binds it without building `args`), under a name
    # no caller uses as a keyword.
    def to(self: Any, _tp_arg0: Any = absent, *args: Any, **kwargs: Any) -> Any:
        d = _tp_arg0
        if d is not absent:
            t = type(d)
            if t is not dtype_t:
                nd = cache_get(d) if t is str_t else None
                if nd is None:
                    nd = mapf(d)
                if nd is not d and nd != d:
                    if track:
                        f = getframe(1)
                        site = sites_get((f.f_code, f.f_lineno, api))
                        if site is None:
                            hit(api, ("device", d), ("device", nd), None)
                        else:
                            site.count += 1
                    d = nd
            args = (d, *args)
        dk = kwargs.get("device")
        if dk is not None:
            nd = mapf(dk)
            if nd is not dk:
                kwargs["device"] = nd
                hit(api, ("device", dk), ("device", nd), None)
        if check64:
            # x64.to("cuda"), x.to("cuda", torch.float64), model_with_float64_buffers.to("cuda")
            out = fn(self, *args, **kwargs)
            if fp64_on(out, dst):
                fp64(api)
            return out
        return fn(self, *args, **kwargs)

    if track or check64:
        return _wraps(to, fn)
    general = to

    devobj = s.mapper.devobj
    device_t = TORCH_DEVICE

    # nothing logged or checked: the common `x.to("cuda")` (a string already mapped), `x.to(torch.float16)`
    # and a torch.device already seen (`x.to(torch.device("cuda", 0))`, and Module.to's per-parameter
    # `t.to(device, dtype, non_blocking)`) are served here, everything else by the general wrapper
    devobj_get = devobj.get

    def fast(self: Any, _tp_arg0: Any = absent, *args: Any, **kwargs: Any) -> Any:
        t = type(_tp_arg0)
        if t is device_t:
            nd = devobj_get(_tp_arg0)  # the target device, or an equal device when not CUDA
            if nd is None:
                return general(self, _tp_arg0, *args, **kwargs)
            if args or kwargs:
                return fn(self, nd, *args, **kwargs)
            return fn(self, nd)
        if not args and not kwargs:
            if t is str_t:
                try:
                    nd = cache[_tp_arg0]
                except KeyError:
                    return general(self, _tp_arg0)
                return fn(self, nd)
            if t is dtype_t:
                return fn(self, _tp_arg0)
        return general(self, _tp_arg0, *args, **kwargs)

    return _wraps(fast, fn)


def install(s: Session) -> None:
    p = s.patcher
    mapper = s.mapper
    log = s.log
    dst = s.target.device_type

    # jit: torch.jit.script resolves torch.zeros & co. by the function's identity; build its table from the
    # originals first, then register our wrappers under the same aten ops (undone by disable()).
    import torch.jit._builtins as jit_builtins

    table = jit_builtins._get_builtin_table()
    # DeviceContext (`with torch.device(...)`, set_default_device) keeps an lru_cache of the constructor
    # functions; fill it with the originals before we replace them.
    import torch.utils._device as device_ctx

    device_ctx._device_constructors()

    registered: list[int] = []
    for name in FACTORIES:
        fn = getattr(torch, name, None)
        if fn is None:
            continue
        w = _kw_device(s, fn, f"torch.{name}")
        if p.set(torch, name, w):
            op = table.get(id(fn))
            if op is not None:
                table[id(w)] = op
                registered.append(id(w))

    def _unregister() -> None:
        for i in registered:
            table.pop(i, None)

    p.undo.append(_unregister)

    for name in TENSOR_NEW:
        p.set(torch.Tensor, name, _kw_device(s, getattr(torch.Tensor, name), f"Tensor.{name}"))

    # the originals, taken before patching (Tensor.to lives on TensorBase: Patcher.original would not see it)
    orig_tensor_to = torch.Tensor.to
    orig_module_to = torch.nn.Module.to
    p.set(torch.Tensor, "to", _to_wrapper(s, torch.Tensor.to, "Tensor.to", True))
    p.set(torch.nn.Module, "to", _to_wrapper(s, torch.nn.Module.to, "Module.to", False))
    p.set(torch.nn.Module, "to_empty", _kw_device(s, torch.nn.Module.to_empty, "Module.to_empty"))

    # Tensor.cuda / Module.cuda / Tensor.is_cuda

    def _cuda_dev(device: Any) -> Any:
        return mapper.device if device is None else mapper.map(device)

    def tensor_cuda(
        self: torch.Tensor,
        device: Any = None,
        non_blocking: bool = False,
        memory_format: torch.memory_format = torch.preserve_format,
    ) -> torch.Tensor:
        nd = _cuda_dev(device)
        cls, why = mapper.classify(device)
        log.hit(
            "Tensor.cuda",
            f"Tensor.cuda({'' if device is None else repr(device)})",
            f"Tensor.to({str(nd)!r})",
            cls,
            why,
        )
        if not s.target.float64 and self.dtype in _FP64:
            s.float64("Tensor.cuda")
        return orig_tensor_to(self, nd, non_blocking=non_blocking, memory_format=memory_format)

    def module_cuda(self: torch.nn.Module, device: Any = None) -> torch.nn.Module:
        nd = _cuda_dev(device)
        cls, why = mapper.classify(device)
        log.hit(
            "Module.cuda",
            f"Module.cuda({'' if device is None else repr(device)})",
            f"Module.to({str(nd)!r})",
            cls,
            why,
        )
        out = orig_module_to(self, nd)
        if not s.target.float64 and fp64_on(out, dst):
            s.float64("Module.cuda")
        return out

    if not log.track and s.target.float64:
        # nothing logged or checked: `x.cuda()` / `model.cuda()` without arguments go straight to Tensor.to /
        # Module.to with the target device (bench/runtime_bench.py: ~1,300 ns added before)
        general_tensor_cuda, general_module_cuda = tensor_cuda, module_cuda
        target_dev = mapper.device
        preserve = torch.preserve_format

        def tensor_cuda_fast(
            self: torch.Tensor, device: Any = None, non_blocking: bool = False, memory_format: Any = preserve
        ) -> torch.Tensor:
            if device is None and memory_format is preserve:
                return orig_tensor_to(self, target_dev, None, non_blocking)
            return general_tensor_cuda(self, device, non_blocking, memory_format)

        def to_target(t: torch.Tensor) -> torch.Tensor:
            return orig_tensor_to(t, target_dev)

        def module_cuda_fast(self: torch.nn.Module, device: Any = None) -> torch.nn.Module:
            # what torch's Module.cuda does, `self._apply(lambda t: t.cuda(device))`, with the target's
            # device and torch's own Tensor.to: no redirect per parameter
            if device is None:
                return self._apply(to_target)
            return general_module_cuda(self, device)

        tensor_cuda, module_cuda = tensor_cuda_fast, module_cuda_fast  # type: ignore[assignment]

    p.set(torch.Tensor, "cuda", tensor_cuda)
    p.set(torch.nn.Module, "cuda", module_cuda)
    # Tensor.is_cuda agrees with torch.cuda.is_available() in every --cuda-available mode: truth (the default)
    # keeps torch's own answer (a tensor on the target is not a CUDA tensor); target: True on the target
    # device; user: True for the user's code, torch's answer for installed libraries.
    if s.cuda_available != "truth":
        from torchport.runtime._callers import CallerPolicy

        orig_is_cuda = torch.Tensor.is_cuda
        sees_target = CallerPolicy(s.cuda_available, s.target.name).sees_target

        def is_cuda(self: torch.Tensor) -> bool:
            if s.live and self.device.type == dst and sees_target(1):
                if dst != "cuda":  # an answer that differs from the truth is logged as such
                    log.hit(
                        "Tensor.is_cuda",
                        "Tensor.is_cuda",
                        f"True (the tensor is on {dst})",
                        MODIFIED,
                        f"answers for {dst} (--cuda-available={s.cuda_available})",
                    )
                return True
            return bool(orig_is_cuda.__get__(self))

        p.set(torch.Tensor, "is_cuda", property(is_cuda, doc=f"True when the tensor is on {dst} (torchport)"))

    # Tensor.type("torch.cuda.FloatTensor")
    orig_type = torch.Tensor.type

    def tensor_type(self: torch.Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        if isinstance(dtype, str) and dtype.startswith("torch.cuda."):
            leaf = dtype[len("torch.cuda.") :]
            new = f"torch.{leaf}" if s.is_cpu else f"torch.{dst}.{leaf}"
            log.hit("Tensor.type", f"Tensor.type({dtype!r})", f"Tensor.type({new!r})", MATCH)
            if leaf == "DoubleTensor" and not s.target.float64:
                s.float64("Tensor.type")
            dtype = new
        if dtype is None:
            return orig_type(self, **kwargs)
        return orig_type(self, dtype, non_blocking, **kwargs)

    p.set(torch.Tensor, "type", tensor_type)

    if not s.target.float64:
        orig_double = torch.Tensor.double

        def double(
            self: torch.Tensor, memory_format: torch.memory_format = torch.preserve_format
        ) -> torch.Tensor:
            if self.device.type == dst:
                s.float64("Tensor.double")
            return orig_double(self, memory_format=memory_format)

        p.set(torch.Tensor, "double", double)

    # storages: storage.cuda() inside map_location callables and old checkpoints
    from torch.storage import TypedStorage, _StorageBase

    for cls in (_StorageBase, TypedStorage):
        orig_scuda = cls.cuda

        def storage_cuda(
            self: Any, device: Any = None, non_blocking: bool = False, _api: str = cls.__name__
        ) -> Any:
            nd = _cuda_dev(device)
            log.hit(f"{_api}.cuda", f"{_api}.cuda()", f"{_api}.to({str(nd)!r})", *mapper.classify(device))
            if s.is_cpu:
                return self if self.device.type == "cpu" else self.cpu()
            return self.to(device=nd, non_blocking=non_blocking)

        p.set(cls, "cuda", _wraps(storage_cuda, orig_scuda))

    # pinned memory: the target decides; on cpu there is no host/device split, pinning is a no-op
    orig_pin = torch.Tensor.pin_memory

    def pin_memory(self: torch.Tensor, device: Any = None) -> torch.Tensor:
        if s.is_cpu:
            log.hit("Tensor.pin_memory", "Tensor.pin_memory()", "self", MODIFIED, "cpu has no pinned memory")
            return self
        if device is not None:
            nd = mapper.map(device)
            if nd is not device:
                log.hit("Tensor.pin_memory", ("device", device), ("device", nd), None)
                return orig_pin(self, nd)
            return orig_pin(self, device)
        return orig_pin(self)

    p.set(torch.Tensor, "pin_memory", pin_memory)

    _install_nn_layers(s)
    _install_nested(s)
    _install_generator(s)
    _install_device_type(s)
    _install_default_device(s)
    _install_parallel(s)
    _install_load(s)
    _install_dataloader(s)


def _install_nn_layers(s: Session) -> None:
    """`__init__` of every torch.nn module class that takes `device=` (Linear, Conv2d, BatchNorm2d, ...)."""
    import torch.nn as nn

    seen: set[type] = set()
    for name in dir(nn):
        cls = getattr(nn, name)
        if not isinstance(cls, type) or not issubclass(cls, nn.Module) or cls in seen:
            continue
        seen.add(cls)
        init = cls.__dict__.get("__init__")
        if init is None:
            continue
        code = getattr(init, "__code__", None)
        if code is not None:  # fast path: the parameter names without inspect.signature
            params = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        else:
            try:
                params = tuple(inspect.signature(init).parameters)
            except (TypeError, ValueError):
                continue
        if "device" not in params:
            continue
        s.patcher.set(cls, "__init__", _kw_device(s, init, f"nn.{name}"))


def _install_generator(s: Session) -> None:
    orig = torch.Generator
    mapf = s.mapper.map
    log = s.log

    class _Meta(type(orig)):  # type: ignore[misc]
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, orig)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, orig)

    class Generator(orig, metaclass=_Meta):  # type: ignore[misc, valid-type]
        """torch.Generator that accepts CUDA devices (torchport); isinstance checks see the original type."""

        def __new__(cls, device: Any = "cpu") -> Any:
            nd = mapf(device)
            if nd is not device:
                log.hit("torch.Generator", ("device", device), ("device", nd), None)
            return orig.__new__(cls, nd)

    Generator.__name__ = Generator.__qualname__ = "Generator"
    Generator.__module__ = "torch"
    s.patcher.set(torch, "Generator", Generator)


def _install_nested(s: Session) -> None:
    """torch.nested.nested_tensor(..., device=) and torch.nested.as_nested_tensor(ts, dtype, device, layout):
    their strided layout reaches torch's C++ without passing through a wrapped torch.* factory
    (`torch._C._nested.nested_tensor`; `_nested_tensor_from_tensor_list` with a positional device)."""
    import torch.nested as tn

    mapf = s.mapper.map
    log = s.log
    if hasattr(tn, "nested_tensor"):
        s.patcher.set(tn, "nested_tensor", _kw_device(s, tn.nested_tensor, "torch.nested.nested_tensor"))
    orig_as = getattr(tn, "as_nested_tensor", None)
    if orig_as is None:
        return

    @functools.wraps(orig_as)
    def as_nested_tensor(ts: Any, *a: Any, **k: Any) -> Any:
        for name, v in zip(("dtype", "device", "layout"), a):  # its positional parameters after ts
            if name in k:
                raise TypeError(f"as_nested_tensor() got multiple values for argument '{name}'")
            k[name] = v
        if len(a) > 3:
            return orig_as(ts, *a, **k)  # more than it takes: torch's own error
        d = k.get("device")
        if d is not None:
            nd = mapf(d)
            if nd is not d and nd != d:
                log.hit("torch.nested.as_nested_tensor", ("device", d), ("device", nd), None)
                k["device"] = nd
        return orig_as(ts, **k)

    s.patcher.set(tn, "as_nested_tensor", as_nested_tensor)


def _index_arg(a: tuple[Any, ...], k: dict[str, Any]) -> Any:
    """The bare index of a `torch.device(N)` / `torch.device(device=N)` call (an int that is not a bool, or a
    numpy integer), else None."""
    if k:
        if a or len(k) != 1 or "device" not in k:
            return None
        v = k["device"]
    elif len(a) == 1:
        v = a[0]
    else:
        return None
    t = type(v)
    if t is int or (t.__module__ == "numpy" and hasattr(v, "__index__") and not isinstance(v, bool)):
        return v
    return None


_KEPT_DEVICES = 256  # devices the torch.device stand-in keeps (distinct strings and (type, index) pairs)


def _install_device_type(s: Session) -> None:
    """`torch.device(N)`: torch 2.13 reads a bare int as an index of the current accelerator
    (torch/csrc/utils/python_arg_parser.h, `deviceFromLong`: `at::getAccelerator(true)`), which is CUDA where
    the script was written. Where torch's answer is not the target's device type (no accelerator here: it
    raises "Cannot access accelerator device when none is available."; another accelerator: its device),
    `torch.device` becomes a stand-in class whose call maps a bare int as every other device argument is
    mapped (logged per call site) and builds everything else with the `torch.device` it replaced. Its
    instances are torch's own devices. As torch_npu's own stand-in (torch_npu/utils/_device.py, NPUDevice),
    it equals and hashes as torch's class, so that `type(d) in {torch.device, ...}` (dynamo's constant types)
    holds whichever of the two a module captured; isinstance / issubclass see torch's class. Where torch
    already answers with the target's device (npu with torch_npu, xpu, mps) nothing is replaced."""
    before = torch.device  # torch's class, or a vendor's stand-in (torch_npu's maps N to npu:N itself)
    real = TORCH_DEVICE
    try:
        native: Any = before(0).type
    except RuntimeError as e:  # no accelerator: torch's refusal
        native = None
        refusal = str(e).split("\n")[0]
    dst = s.target.device_type
    if native == dst:
        return
    here = f"torch here gives {native}:N" if native else f"torch here raises ({refusal})"
    mapper = s.mapper
    log = s.log

    meta_base: type = type if SPEEDUPS is None else SPEEDUPS.DeviceMeta

    class _Meta(meta_base):  # type: ignore[misc, valid-type]
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, real)

        def __subclasscheck__(cls, sub: Any) -> bool:
            return isinstance(sub, type) and issubclass(sub, real)

        def __eq__(cls, other: Any) -> bool:
            return other is cls or other is real

        def __ne__(cls, other: Any) -> bool:
            return not (other is cls or other is real)

        def __hash__(cls) -> int:
            return hash(real)

    # Devices built from a string, or a string and an int (exact types: ("cuda", 0.0) and ("cuda", False)
    # equal ("cuda", 0) as keys), are kept and given again: a device is immutable and has no attributes of
    # its own, so only `is` can tell a kept one from a new one. A lookup costs less than torch's own
    # construction, and the Tensor.to wrapper then finds the kept object by identity
    # (bench/runtime_bench.py: `x.to(torch.device("cuda", 0))`). Bounded: only torch's successful answers
    # are kept, at most _KEPT_DEVICES of them.
    kept: dict[tuple[Any, ...], Any] = {}
    kept_get = kept.get
    str_t, int_t = str, int

    def slow(a: tuple[Any, ...], k: dict[str, Any]) -> Any:
        """The calls the fast path does not serve: keywords, or one argument that is not a string. Called by
        `new` or `rest`, each called by the user's code: the log's call site is 3 frames up."""
        n = _index_arg(a, k)
        if n is None or n < 0 or mapper.off:  # torch's own answer (a negative index: torch's error)
            return before(*a, **k)
        nd = mapper.torch_device(int(n))
        klass, why = mapper.classify(int(n))
        if klass == MATCH:
            why = f"a bare int is an index of the accelerator, CUDA's where the script ran; {here}"
        log.hit("torch.device", (CALL, "torch.device", (int(n),)), (VALUE, nd), klass, why, depth=3)
        return nd

    def rest(*a: Any, **k: Any) -> Any:  # what DeviceMeta's call (C) does not serve
        return slow(a, k)

    # The call is the class's __new__ (type.__call__ runs it in C and, as it returns no instance of the class,
    # no __init__): about half the cost of a Python __call__ on the metaclass, measured with timeit. With the
    # C extension, the metaclass's own call (DeviceMeta) does what `new` does, and `new` serves only a direct
    # `torch.device.__new__(torch.device, ...)`.
    def new(cls: Any, *a: Any, **k: Any) -> Any:
        if not k:
            n = len(a)
            if type(a[0]) is str_t if n == 1 else n == 2 and type(a[0]) is str_t and type(a[1]) is int_t:
                d = kept_get(a)
                if d is None:
                    d = before(*a)
                    if len(kept) < _KEPT_DEVICES:
                        kept[a] = d
                return d
            if n != 1:
                return before(*a)
        return slow(a, k)

    ns = {"__module__": "torch", "__doc__": real.__doc__, "__new__": new}
    if SPEEDUPS is not None:
        ns["_tp_device_call"] = (kept, before, rest, _KEPT_DEVICES)
    proxy = _Meta("device", (), ns)
    proxy.__qualname__ = "device"
    s.patcher.set(torch, "device", proxy)


def _install_default_device(s: Session) -> None:
    import torch.utils._device as device_ctx

    mapf = s.mapper.map
    log = s.log
    orig_set = torch.set_default_device

    @functools.wraps(orig_set)
    def set_default_device(device: Any) -> None:
        nd = mapf(device)
        if nd is not device:
            log.hit("torch.set_default_device", ("device", device), ("device", nd), None)
        return orig_set(nd)

    s.patcher.set(torch, "set_default_device", set_default_device)
    orig_init = device_ctx.DeviceContext.__init__

    def init(self: Any, device: Any) -> None:
        nd = mapf(device)
        if nd is not device:
            log.hit("with torch.device", ("device", device), ("device", nd), None)
        orig_init(self, nd)

    s.patcher.set(device_ctx.DeviceContext, "__init__", init)


def _install_parallel(s: Session) -> None:
    """DDP / FSDP device ids and init_device_mesh's device type."""
    mapper = s.mapper
    log = s.log
    indexed = s.target.has_device_index

    def map_ids(ids: Any) -> Any:
        if ids is None:
            return None
        if not indexed:
            return None  # DDP on a single-device target (cpu, mps) must get device_ids=None
        return [mapper.map(i) for i in ids]

    from torch.nn.parallel import DistributedDataParallel as DDP

    orig_ddp = DDP.__init__

    @functools.wraps(orig_ddp)
    def ddp_init(
        self: Any, module: Any, device_ids: Any = None, output_device: Any = None, *a: Any, **kw: Any
    ) -> None:
        if device_ids is not None or output_device is not None:
            new_ids = map_ids(device_ids)
            new_out = (mapper.map(output_device) if indexed else None) if output_device is not None else None
            cls, why = (MATCH, "") if indexed else (MODIFIED, f"{s.target.device_type} takes no device_ids")
            log.hit(
                "DistributedDataParallel",
                f"DDP(device_ids={device_ids!r}, output_device={output_device!r})",
                f"DDP(device_ids={new_ids!r}, output_device={new_out!r})",
                cls,
                why,
            )
            device_ids, output_device = new_ids, new_out
        orig_ddp(self, module, device_ids, output_device, *a, **kw)

    s.patcher.set(DDP, "__init__", ddp_init)

    def patch_fsdp(module: Any) -> None:
        FSDP = getattr(module, "FullyShardedDataParallel", None)
        if FSDP is None:
            return
        orig_fsdp = FSDP.__init__

        @functools.wraps(orig_fsdp)
        def fsdp_init(self: Any, *a: Any, **kw: Any) -> None:
            d = kw.get("device_id")
            if d is not None:
                nd = mapper.map(d)
                if not indexed and nd is not d:
                    nd = None
                if nd is not d:
                    log.hit("FullyShardedDataParallel", ("device_id", d), ("device_id", nd), None)
                    kw["device_id"] = nd
            orig_fsdp(self, *a, **kw)

        s.patcher.set(FSDP, "__init__", fsdp_init)

    # importing FSDP costs ~2 s: patch it when the script imports it
    s.when_imported("torch.distributed.fsdp", patch_fsdp)

    try:
        import torch.distributed.device_mesh as dm
    except Exception:
        dm = None
    if dm is not None and hasattr(dm, "init_device_mesh"):
        orig_mesh = dm.init_device_mesh
        dst = s.target.device_type

        @functools.wraps(orig_mesh)
        def init_device_mesh(device_type: str, *a: Any, **kw: Any) -> Any:
            if device_type == "cuda":
                log.hit("init_device_mesh", "init_device_mesh('cuda')", f"init_device_mesh({dst!r})", MATCH)
                device_type = dst
            return orig_mesh(device_type, *a, **kw)

        s.patcher.set(dm, "init_device_mesh", init_device_mesh)
        import torch.distributed as dist

        if getattr(dist, "init_device_mesh", None) is orig_mesh:
            s.patcher.set(dist, "init_device_mesh", init_device_mesh)


def _install_load(s: Session) -> None:
    """torch.load of a checkpoint saved on CUDA restores onto the target. A vendor package may have replaced
    `torch.load` with its own (torch_npu's import sets `torch.load` to its serialization's `load`, leaving
    `torch.serialization.load` torch's): each is wrapped, so the script's `torch.load` keeps the vendor's."""
    import torch.serialization as ser

    orig_load = ser.load
    wrapped = _load_wrapper(s, orig_load)
    s.patcher.set(ser, "load", wrapped)
    if torch.load is orig_load:
        s.patcher.set(torch, "load", wrapped)
    elif callable(torch.load):
        s.patcher.set(torch, "load", _load_wrapper(s, torch.load))


def _load_wrapper(s: Session, orig_load: Any) -> Any:
    """`orig_load` with CUDA map locations (and the checkpoint's CUDA storages) mapped to the target."""
    import torch.serialization as ser

    mapper = s.mapper
    log = s.log
    restore = ser.default_restore_location

    @functools.wraps(orig_load)
    def load(f: Any, map_location: Any = None, *a: Any, **kw: Any) -> Any:
        new = mapper.map_location(map_location, restore)
        if map_location is None:
            # logged only when the checkpoint really has CUDA storages: the restore function sees every
            # storage's saved location, so knowing it costs nothing extra
            cuda_locs: set[str] = set()

            def seen(storage: Any, location: str) -> Any:
                if location.startswith("cuda"):
                    cuda_locs.add(location)
                return new(storage, location)

            out = orig_load(f, seen, *a, **kw)
            if cuda_locs:
                saved = ", ".join(sorted(cuda_locs))
                onto = ", ".join(sorted({str(mapper.map(loc)) for loc in cuda_locs}))
                log.hit(
                    "torch.load",
                    f"torch.load({render_arg(f)}) [storages saved on {saved}]",
                    f"torch.load({render_arg(f)}, map_location=<{saved} -> {onto}>)",
                    MATCH,
                )
            return out
        if new is not map_location and not callable(new):
            log.hit("torch.load", ("map_location", map_location), ("map_location", new), None)
        elif callable(new) and new is not map_location:
            log.hit(
                "torch.load",
                f"torch.load(map_location={type(map_location).__name__})",
                f"torch.load(map_location=same, then cuda*->{mapper.dst})",
                MATCH,
            )
        return orig_load(f, new, *a, **kw)

    return load


def _install_dataloader(s: Session) -> None:
    from torch.utils.data import DataLoader

    orig = DataLoader.__init__
    mapper = s.mapper
    log = s.log

    @functools.wraps(orig)
    def init(self: Any, *a: Any, **kw: Any) -> None:
        dev = kw.get("pin_memory_device")
        if s.is_cpu:
            if kw.get("pin_memory") or dev:
                log.hit(
                    "DataLoader",
                    f"DataLoader(pin_memory={kw.get('pin_memory')!r}, pin_memory_device={dev!r})",
                    "DataLoader(pin_memory=False, pin_memory_device='')",
                    MODIFIED,
                    "cpu has no pinned memory: batches are already where the model is",
                )
                kw["pin_memory"] = False
                kw["pin_memory_device"] = ""
        elif dev:
            nd = mapper.map(dev)
            if nd is not dev:
                kw["pin_memory_device"] = str(nd)
                log.hit("DataLoader", ("pin_memory_device", dev), ("pin_memory_device", str(nd)), MATCH)
        elif kw.get(
            "pin_memory"
        ):  # pinned for the target, not for CUDA (torch_mlu's gpu_migration does this)
            kw["pin_memory_device"] = s.target.device_type
            log.hit(
                "DataLoader",
                "DataLoader(pin_memory=True)",
                f"DataLoader(pin_memory=True, pin_memory_device={s.target.device_type!r})",
                MATCH,
            )
        orig(self, *a, **kw)

    s.patcher.set(DataLoader, "__init__", init)


__all__ = ["FACTORIES", "TENSOR_NEW", "install", "MISMATCH"]
