"""The device module of the rehearsal device: `torch.npu` / `torch_npu.npu`, `torch.mlu`, `torch.musa`.

One pool of implementations (POOL); each target's module exposes the names of the vendor's published
`__all__` (../shared/upstream: torch_npu.npu.__all__.txt, torch_mlu.mlu.__all__.txt) that the pool
implements, plus the functions torch itself requires of a PrivateUse1 device module (REQUIRED_BY_TORCH).
MUSA publishes no such list: its module exposes the whole pool.
"""

from __future__ import annotations

import json
import os
import re
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any, Optional, Union

import torch

from torchport import _versions
from torchport.rehearse import session as state

# reference §2.1 (torch/utils/backend_registration.py): what torch calls on the module of a PrivateUse1
# device for AMP and RNG, whether the vendor lists it in __all__ or not.
REQUIRED_BY_TORCH: frozenset[str] = frozenset(
    {
        "get_amp_supported_dtype",
        "is_autocast_enabled",
        "set_autocast_enabled",
        "get_autocast_dtype",
        "set_autocast_dtype",
        "_is_in_bad_fork",
        "manual_seed_all",
        "device_count",
        "get_rng_state",
        "set_rng_state",
        "is_available",
        "current_device",
        "amp",  # not a torch requirement: the vendors' amp submodule (torch_npu/npu/amp, reference §1.1)
    }
)
# Files of the vendors' published __all__ lists, per target (None: not published).
ALL_LISTS: dict[str, Optional[str]] = {
    "npu": "ascend-torch_npu/torch_npu.npu.__all__.txt",
    "mlu": "cambricon-torch_mlu/torch_mlu.mlu.__all__.txt",
    "musa": None,
}
# Where the vendor lists are, in the source tree's sibling shared/ folder or a copy named by
# TORCHPORT_UPSTREAM; the stand-in ships its own copy of the names (standins/<target>_all.txt).
STANDIN_DIR = Path(__file__).resolve().parent / "standins"

DevLike = Union[int, str, torch.device, None]


def _ext() -> Any:
    return state.ext()


def _target() -> str:
    s = state.session()
    assert s is not None
    return s.target


def _index(device: DevLike = None) -> int:
    if device is None:
        return int(_ext().current_device())
    if isinstance(device, int):
        return device
    d = torch.device(device) if isinstance(device, str) else device
    if d.type not in (_target(), "privateuseone"):
        raise ValueError(f"Expected a {_target()} device, but got: {d}")
    return int(_ext().current_device()) if d.index is None else d.index


# ---- device ----
def is_available() -> bool:
    return bool(_ext().device_count() > 0)


def is_initialized() -> bool:
    return True


def init() -> None:
    return None


def device_count() -> int:
    return int(_ext().device_count())


def current_device() -> int:
    return int(_ext().current_device())


def set_device(device: DevLike) -> None:
    _ext().set_device(_index(device))


def synchronize(device: DevLike = None) -> None:
    """Every op has finished when it returns on the rehearsal device."""
    _index(device)


def get_device_name(device: DevLike = None) -> str:
    return f"torchport rehearsal {_target().upper()} {_index(device)} (host memory, CPU kernels)"


class _Props:
    def __init__(self, index: int) -> None:
        self.name = get_device_name(index)
        # the same total as mem_get_info(): the capacity, or the host's memory when it is unlimited (issue
        # 33: `1 - free / total` and `total_memory` must agree)
        self.total_memory = _mem_get_info(index)[1]
        self.index = index

    def __repr__(self) -> str:
        return f"_{_target().upper()}DeviceProperties(name='{self.name}', total_memory={self.total_memory})"


def get_device_properties(device: DevLike = None) -> _Props:
    return _Props(_index(device))


def get_device_capability(device: DevLike = None) -> Optional[tuple[int, int]]:
    """(0, 0), or as the vendor answers where data/targets.json names its variable (`device_capability_env`,
    torch_npu: None unless TORCH_NPU_DEVICE_CAPABILITY is "major.minor", then that tuple; with a warning)."""
    _index(device)
    from torchport.targets import TARGETS

    env = TARGETS[_target()].device_capability_env
    if not env:
        return (0, 0)
    value = os.environ.get(env, "")
    m = re.fullmatch(r"(\d+)\.(\d+)", value)
    if m:
        return (int(m.group(1)), int(m.group(2)))
    how = f"{env}={value!r} is not 'major.minor'" if value else f"{env} is not set"
    warnings.warn(
        f"get_device_capability() is None: {how} (the vendor's answer; set it, e.g. {env}=8.0, for a tuple)",
        stacklevel=2,
    )
    return None


def can_device_access_peer(device: DevLike, peer: DevLike) -> bool:
    _index(device)
    _index(peer)
    return True


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


def utilization(device: DevLike = None) -> int:
    _index(device)
    return 0


class device:  # noqa: N801 (the vendors' name)
    """Context manager that changes the current device."""

    def __init__(self, device: DevLike) -> None:
        self.idx = -1 if device is None else _index(device)
        self.prev = -1

    def __enter__(self) -> None:
        self.prev = current_device()
        if self.idx >= 0:
            set_device(self.idx)

    def __exit__(self, *exc: object) -> None:
        if self.idx >= 0:
            set_device(self.prev)


class device_of(device):  # noqa: N801
    def __init__(self, obj: torch.Tensor) -> None:
        super().__init__(obj.get_device() if obj.device.type == _target() else None)


# ---- streams and events (torch.Stream / torch.Event on the rehearsal device, host-timed) ----
class Stream(torch.Stream):
    def __new__(cls, device: DevLike = None, priority: int = 0, **kwargs: Any) -> Stream:
        if "stream_id" in kwargs:
            return super().__new__(cls, **kwargs)
        return super().__new__(cls, device=torch.device(_target(), _index(device)), priority=priority)

    def wait_stream(self, stream: torch.Stream) -> None:
        self.wait_event(stream.record_event())


class Event:
    """Makes a torch.Event on the rehearsal device (host-timed). torch checks the exact type of an event
    (elapsed_time, wait), so the object made is a torch.Event, not an instance of this class."""

    def __new__(  # type: ignore[misc]
        cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> torch.Event:
        return torch.Event(device=torch.device(_target(), current_device()), enable_timing=enable_timing)


def _wrap_stream(s: torch.Stream) -> Stream:
    return Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


def current_stream(device: DevLike = None) -> Stream:
    return _wrap_stream(torch.accelerator.current_stream(_index(device)))


def default_stream(device: DevLike = None) -> Stream:
    return Stream(stream_id=0, device_index=_index(device), device_type=_device_type_code())


def _device_type_code() -> int:
    return int(torch.Stream(device=torch.device(_target(), 0)).device_type)


def set_stream(stream: torch.Stream) -> None:
    torch.accelerator.set_stream(stream)


class StreamContext:
    def __init__(self, stream: Optional[torch.Stream]) -> None:
        self.stream = stream
        self.prev: Optional[torch.Stream] = None

    def __enter__(self) -> None:
        if self.stream is not None:
            self.prev = torch.accelerator.current_stream(self.stream.device_index)
            torch.accelerator.set_stream(self.stream)

    def __exit__(self, *exc: object) -> None:
        if self.prev is not None:
            torch.accelerator.set_stream(self.prev)


def stream(stream: Optional[torch.Stream]) -> StreamContext:
    return StreamContext(stream)


# ---- random ----
def _gen(device: DevLike = None) -> torch.Generator:
    return _ext().default_generator(_index(device))


def manual_seed(seed: int) -> None:
    _gen().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for i in range(device_count()):
        _gen(i).manual_seed(int(seed))


def seed() -> None:
    _gen().seed()


def seed_all() -> None:
    _gen().seed()


def initial_seed() -> int:
    return int(_gen().initial_seed())


def get_rng_state(device: DevLike = "current") -> torch.Tensor:
    return _gen(None if device == "current" else device).get_state()


def set_rng_state(new_state: torch.Tensor, device: DevLike = "current") -> None:
    _gen(None if device == "current" else device).set_state(new_state)


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    for i, s in enumerate(new_states):
        set_rng_state(s, i)


def _is_in_bad_fork() -> bool:
    return False


# ---- memory ----
def memory_stats(device: DevLike = None) -> dict[str, int]:
    return dict(_ext().memory_stats(_index(device)))


def nested_stats(flat: dict[str, int]) -> dict[str, Any]:
    """Flat memory statistics ("allocated_bytes.all.current") as the nested dict torch's
    memory_stats_as_nested_dict returns."""
    out: dict[str, Any] = {}
    for k, v in flat.items():
        node = out
        parts = k.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = v
    return out


def memory_stats_as_nested_dict(device: DevLike = None) -> dict[str, Any]:
    return nested_stats(memory_stats(device))


def memory_allocated(device: DevLike = None) -> int:
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device: DevLike = None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device: DevLike = None) -> int:
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device: DevLike = None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def reset_peak_memory_stats(device: DevLike = None) -> None:
    _ext().reset_peak_memory_stats(_index(device))


reset_max_memory_allocated = reset_peak_memory_stats
reset_max_memory_cached = reset_peak_memory_stats
reset_accumulated_memory_stats = reset_peak_memory_stats


def empty_cache() -> None:
    _ext().empty_cache()


def _mem_get_info(device: DevLike = None) -> tuple[int, int]:
    cap = int(_ext().capacity())
    if cap < 0:
        import os

        cap = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    used = memory_reserved(device)
    return (max(0, cap - used), cap)


mem_get_info = _mem_get_info


def memory_summary(device: DevLike = None, abbreviated: bool = False) -> str:
    s = memory_stats(device)
    return "\n".join(f"{k}: {v}" for k, v in sorted(s.items()))


def memory_snapshot() -> list[Any]:
    return []


_fraction: dict[int, float] = {}


def set_per_process_memory_fraction(fraction: float, device: DevLike = None) -> None:
    _fraction[_index(device)] = float(fraction)


def get_per_process_memory_fraction(device: DevLike = None) -> float:
    return _fraction.get(_index(device), 1.0)


def ipc_collect() -> None:
    return None


# ---- amp (torch.amp on the device; the module's own amp submodule is built below) ----
def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


def is_autocast_enabled() -> bool:
    return bool(torch.is_autocast_enabled(_target()))


def set_autocast_enabled(enabled: bool) -> None:
    torch.set_autocast_enabled(_target(), enabled)


def get_autocast_dtype() -> torch.dtype:
    return torch.get_autocast_dtype(_target())


def set_autocast_dtype(dtype: torch.dtype) -> None:
    torch.set_autocast_dtype(_target(), dtype)


# ---- legacy tensor types (constructors on the device) ----
def _tensor_type(dtype: torch.dtype, name: str) -> type:
    def __new__(cls: type, *args: Any, **kwargs: Any) -> torch.Tensor:  # noqa: N807
        if args and not isinstance(args[0], int):
            return torch.tensor(*args, dtype=dtype, device=_target(), **kwargs)
        return torch.empty(*args, dtype=dtype, device=_target(), **kwargs)

    return type(name, (), {"__new__": __new__, "dtype": dtype})


def _storage_type(dtype: torch.dtype, name: str) -> type:
    def __new__(cls: type, size: int = 0) -> Any:  # noqa: N807
        return torch.TypedStorage(size, dtype=dtype, device=_target())

    return type(name, (), {"__new__": __new__, "dtype": dtype})


_TYPES = {
    "Bool": torch.bool, "Byte": torch.uint8, "Char": torch.int8, "Short": torch.int16, "Int": torch.int32,
    "Long": torch.int64, "Half": torch.float16, "Float": torch.float32, "Double": torch.float64,
    "BFloat16": torch.bfloat16, "ComplexFloat": torch.complex64, "ComplexDouble": torch.complex128,
}  # fmt: skip


# ---- small APIs with a plain meaning on a host device ----
def is_current_stream_capturing() -> bool:
    return False


_sync_debug_mode = [0]


def get_sync_debug_mode() -> int:
    return _sync_debug_mode[0]


def set_sync_debug_mode(debug_mode: Union[int, str]) -> None:
    _sync_debug_mode[0] = (
        {"default": 0, "warn": 1, "error": 2}.get(str(debug_mode), 0)
        if isinstance(debug_mode, str)
        else int(debug_mode)
    )


def get_allocator_backend() -> str:
    return "native"


def host_memory_stats() -> dict[str, int]:
    return {}


def host_memory_stats_as_nested_dict() -> dict[str, Any]:
    return {}


def reset_accumulated_host_memory_stats() -> None:
    return None


def reset_peak_host_memory_stats() -> None:
    return None


def check_error(res: int) -> None:
    if res != 0:
        raise RuntimeError(f"{_target()} runtime error {res}")


class _Marker:
    """Profiler range markers (nvtx / cnpx / mstx style): no-ops on the rehearsal device."""

    @staticmethod
    def mark(msg: str) -> None:
        return None

    @staticmethod
    def range_push(msg: str) -> int:
        return 0

    @staticmethod
    def range_pop() -> int:
        return 0

    class range:  # noqa: N801
        def __init__(self, msg: str, *args: Any, **kwargs: Any) -> None:
            self.msg = msg

        def __enter__(self) -> None:
            return None

        def __exit__(self, *exc: object) -> None:
            return None


# Names of the vendors' lists that the rehearsal device does not emulate: they exist and raise
# NotImplementedError when used (graphs, pluggable allocators, memory pools, raw allocations, handles).
NOT_EMULATED: dict[str, frozenset[str]] = {
    "npu": frozenset(
        {
            "ExternalStream", "MemPool", "NPUGraph", "NPUPluggableAllocator", "caching_allocator_alloc",
            "caching_allocator_delete", "change_current_allocator", "current_blas_handle", "graph",
            "graph_pool_handle", "make_graphed_callables", "use_mem_pool",
        }
    ),
    "mlu": frozenset(
        {
            "ExternalStream", "MLUGraph", "MLUPluggableAllocator", "caching_allocator_alloc",
            "caching_allocator_delete", "change_current_allocator", "graph", "graph_pool_handle",
            "make_graphed_callables",
        }
    ),
}  # fmt: skip


def _not_emulated(target: str, name: str) -> Any:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"torch.{target}.{name} is not emulated by torchport rehearse")

    return type(name, (), {"__new__": lambda cls, *a, **k: fail(), "__call__": fail, "__doc__": fail.__doc__})


def _musa_names() -> frozenset[str]:
    """torch_musa mirrors torch.cuda (reference peer-migration-tools.md 3.3); it publishes no __all__ of
    its own, so its stand-in offers the names of the installed torch.cuda, CUDA in a name becoming MUSA."""
    import torch.cuda

    return frozenset(n.replace("CUDA", "MUSA") for n in dir(torch.cuda) if not n.startswith("_"))


def _pool() -> dict[str, Any]:
    me = sys.modules[__name__]
    names = [n for n in dir(me) if not n.startswith("__")]
    pool = {
        n: getattr(me, n)
        for n in names
        if callable(getattr(me, n)) and getattr(getattr(me, n), "__module__", "") == __name__
    }
    for n in (
        "memory_cached",
        "max_memory_cached",
        "reset_max_memory_allocated",
        "reset_max_memory_cached",
        "reset_accumulated_memory_stats",
    ):
        pool[n] = getattr(me, n)
    pool["mem_get_info"] = _mem_get_info
    for k, dt in _TYPES.items():
        pool[f"{k}Tensor"] = _tensor_type(dt, f"{k}Tensor")
        pool[f"{k}Storage"] = _storage_type(dt, f"{k}Storage")
    for private in (
        "_index",
        "_ext",
        "_target",
        "_gen",
        "_wrap_stream",
        "_device_type_code",
        "_pool",
        "_tensor_type",
        "_storage_type",
        "_mem_get_info",
        "_Props",
        "build",
        "vendor_all",
        "_Marker",
        "_not_emulated",
        "_musa_names",
        "_vendor_wheel_names",
    ):
        pool.pop(private, None)
    return pool


def vendor_all(target: str) -> Optional[frozenset[str]]:
    """The names of the vendor's device module: its published __all__ (the copy shipped with the stand-ins)
    and, for npu, what torch_npu.npu has in the newest pinned torch-npu wheel."""
    if ALL_LISTS.get(target) is None:
        return None
    path = STANDIN_DIR / f"{target}_all.txt"
    return frozenset(
        ln.strip()
        for ln in path.read_text(encoding="utf-8").splitlines()
        if ln.strip() and not ln.startswith("#")
    ) | _vendor_wheel_names(target)


def _vendor_wheel_names(target: str) -> frozenset[str]:
    """torch_npu.npu's public names in the torch-npu wheel of the newest torch line
    (data/vendor/torch_npu_namespace.json, read from the wheels' Python source by tools/check_vendor_npu.py):
    default_generators and the submodules amp, memory, random, streams, graphs, which __all__ omits."""
    if target != "npu":
        return frozenset()
    from torchport.targets import data_dir

    path = data_dir() / "vendor" / "torch_npu_namespace.json"
    if not path.is_file():
        return frozenset()
    wheels = json.loads(path.read_text(encoding="utf-8"))["wheels"].values()
    newest = max(wheels, key=lambda w: _versions.parse(w["torch"]))
    return frozenset(newest["names"])


def build(target: str) -> ModuleType:
    """The device module for `target` (cached in sys.modules as torchport.rehearse.devmod_<target>)."""
    name = f"torchport.rehearse.devmod_{target}"
    if name in sys.modules:
        return sys.modules[name]
    mod = ModuleType(name, f"torchport rehearsal stand-in of the {target} device module")
    pool = _pool()
    from torchport.rehearse import amp as amp_mod

    pool["amp"] = amp_mod.build(target)
    pool["default_generators"] = tuple(_ext().default_generator(i) for i in range(device_count()))
    markers = ModuleType(f"{name}.markers")
    for k in ("mark", "range_push", "range_pop", "range"):
        setattr(markers, k, getattr(_Marker, k))
    for sub, names in (
        (
            "memory",
            (
                "empty_cache",
                "memory_allocated",
                "memory_reserved",
                "max_memory_allocated",
                "max_memory_reserved",
                "memory_stats",
                "reset_peak_memory_stats",
                "mem_get_info",
            ),
        ),
        (
            "random",
            (
                "manual_seed",
                "manual_seed_all",
                "seed",
                "seed_all",
                "initial_seed",
                "get_rng_state",
                "set_rng_state",
                "get_rng_state_all",
                "set_rng_state_all",
            ),
        ),
        ("streams", ("Stream", "Event")),
        ("graphs", ()),
    ):
        m = ModuleType(f"{name}.{sub}")
        for k in names:
            setattr(m, k, pool[k])
        pool[sub] = m
    pool["profiler"] = ModuleType(f"{name}.profiler")
    for k in ("cnpx", "nvtx", "mstx"):
        pool[k] = markers
    allowed = vendor_all(target) if target != "musa" else _musa_names()
    assert allowed is not None
    for k in sorted(allowed | REQUIRED_BY_TORCH):
        if k in pool:
            setattr(mod, k, pool[k])
        elif k in NOT_EMULATED.get(target, ()) or target == "musa":
            setattr(mod, k, _not_emulated(target, k))
    mod.__all__ = sorted(k for k in vars(mod) if not k.startswith("_"))  # type: ignore[attr-defined]
    sys.modules[name] = mod
    return mod
