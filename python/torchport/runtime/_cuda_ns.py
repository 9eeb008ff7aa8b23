"""The torch.cuda namespace: device management, streams and events, memory, RNG, graphs, nvtx, typed tensors.

Each name goes to the same name in the target's device module (torch.get_device_module(target)) when it has
it; otherwise to an emulation here, classified `modified` or `mismatch` with the reason. One code path for
every target: only the device module differs.
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import sys
import threading
import time
import types
from typing import Any, Callable, Iterator, Optional

import torch

from torchport.runtime._log import CALL, MATCH, MISMATCH, MODIFIED, VALUE
from torchport.runtime._session import Session

# name -> position of the device argument (None: no device argument). Source: PEERS §2 (transfer_to_npu wraps
# these torch.cuda functions' device arguments) ∪ §3.1 (torch_mlu) ∪ torch.cuda.__all__ in torch 2.13.
FUNCTIONS: dict[str, Optional[int]] = {
    # device management
    "device_count": None,
    "current_device": None,
    "set_device": 0,
    "get_device_name": 0,
    "get_device_properties": 0,
    "get_device_capability": 0,
    "synchronize": 0,
    "is_initialized": None,
    "init": None,
    "ipc_collect": None,
    "get_arch_list": None,
    "list_gpu_processes": 0,
    "is_bf16_supported": None,
    "utilization": 0,
    # memory
    "empty_cache": None,
    "mem_get_info": 0,
    "memory_allocated": 0,
    "max_memory_allocated": 0,
    "memory_reserved": 0,
    "max_memory_reserved": 0,
    "memory_cached": 0,
    "max_memory_cached": 0,
    "memory_stats": 0,
    "memory_summary": 0,
    "memory_snapshot": None,
    "reset_peak_memory_stats": 0,
    "reset_max_memory_allocated": 0,
    "reset_max_memory_cached": 0,
    "reset_accumulated_memory_stats": 0,
    "set_per_process_memory_fraction": 1,
    # RNG
    "manual_seed": None,
    "manual_seed_all": None,
    "seed": None,
    "seed_all": None,
    "initial_seed": None,
    "get_rng_state": 0,
    "set_rng_state": 1,
    "get_rng_state_all": None,
    "set_rng_state_all": None,
    # streams
    "current_stream": 0,
    "default_stream": 0,
    "set_stream": None,
    "stream": None,
    # graphs
    "is_current_stream_capturing": None,
    "graph_pool_handle": None,
    "make_graphed_callables": None,
    # issue 22: device, allocator and stream extras (torch.cuda.__all__ in torch 2.13; PEERS §3.1 torch_mlu
    # redirects the whole torch.cuda namespace)
    "is_tf32_supported": None,
    "clock_rate": 0,
    "temperature": 0,
    "power_draw": 0,
    "can_device_access_peer": 0,
    "get_sync_debug_mode": None,
    "set_sync_debug_mode": None,
    "get_gencode_flags": None,
    "memory_stats_as_nested_dict": 0,
    "memory_usage": 0,
    "device_memory_used": 0,
    "get_per_process_memory_fraction": 0,
    "host_memory_stats": None,
    "host_memory_stats_as_nested_dict": None,
    "reset_accumulated_host_memory_stats": None,
    "reset_peak_host_memory_stats": None,
    "caching_allocator_enable": None,
    "caching_allocator_disabled": None,
    "get_allocator_backend": None,
    "use_mem_pool": 1,
}
# torch.cuda classes that are redirected as a whole.
CLASSES: tuple[str, ...] = (
    "Stream",
    "Event",
    "device",
    "device_of",
    "StreamContext",
    "CUDAGraph",
    "graph",
    "MemPool",
)
TYPED_TENSORS: tuple[str, ...] = (
    "FloatTensor",
    "DoubleTensor",
    "HalfTensor",
    "BFloat16Tensor",
    "ByteTensor",
    "CharTensor",
    "ShortTensor",
    "IntTensor",
    "LongTensor",
    "BoolTensor",
)
NVTX: tuple[str, ...] = ("range_push", "range_pop", "range", "mark", "range_start", "range_end")

_TORCH_RANDOM = os.path.join(os.path.dirname(torch.__file__), "random.py")
_DYNAMO = os.path.join(os.path.dirname(torch.__file__), "_dynamo") + os.sep


def _traced_line() -> Optional[tuple[Any, int]]:
    """(code, line) of the user's function that dynamo is tracing now, or None."""
    sc = sys.modules.get("torch._dynamo.symbolic_convert")
    try:
        tx = sc.InstructionTranslator.current_tx()  # type: ignore[union-attr]
        return tx.f_code, int(tx.lineno)
    except Exception:  # noqa: BLE001 - not tracing, or another torch version: dynamo's own line is logged
        return None


# On cpu the device module's Stream/Event are placeholders without timing or synchronize(): use ours.
_CPU_OWN = {
    "current_device",
    "Stream",
    "Event",
    "current_stream",
    "default_stream",
    "stream",
    "set_stream",
    "StreamContext",
}


class _HostEvent(torch.Event):
    """torch.cuda.Event on a host target: a real torch.Event of the cpu device (so torch's own bindings and
    isinstance(e, torch.Event) take it) whose record() takes a timestamp; CPU work is synchronous, so the
    interval between two records is the work's duration. torch's cpu Event cannot record ("cpu backend
    doesn't support events"): record/wait/query/synchronize/elapsed_time are served here."""

    def __new__(
        cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False, **kw: Any
    ) -> _HostEvent:
        return super().__new__(cls, device="cpu", enable_timing=enable_timing)  # type: ignore[call-arg]

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False, **kw: Any
    ) -> None:
        self.enable_timing = enable_timing
        self._t: Optional[int] = None

    def record(self, stream: Any = None) -> None:
        self._t = time.perf_counter_ns()

    def wait(self, stream: Any = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event: Any) -> float:
        end = getattr(end_event, "_t", None)
        if self._t is None or end is None:
            raise RuntimeError("elapsed_time: both events must be recorded first")
        return (end - self._t) / 1e6


class _HostStream(torch.Stream):
    """torch.cuda.Stream on a host target: a real torch.Stream of the cpu device (so torch's own bindings,
    `Tensor.record_stream` included, and isinstance(s, torch.Stream) take it); work runs in order on the
    calling thread. torch's cpu Stream has no events (wait_stream raises "cpu backend doesn't support
    events"): the stream-to-stream calls are served here, as no-ops that are exact for in-order work."""

    def __new__(cls, device: Any = None, priority: int = 0, **kw: Any) -> _HostStream:
        return super().__new__(cls, device="cpu", priority=priority)  # type: ignore[call-arg]

    def __init__(self, device: Any = None, priority: int = 0, **kw: Any) -> None:
        self.priority = priority
        self.cuda_stream = 0

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True

    def wait_stream(self, stream: Any) -> None:
        return None

    def wait_event(self, event: Any) -> None:
        return None

    def record_event(self, event: Optional[_HostEvent] = None) -> _HostEvent:
        event = event or _HostEvent()
        event.record(self)
        return event

    def __enter__(self) -> _HostStream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


_DEFAULT_STREAM = _HostStream()


class _HostGraph:
    """torch.cuda.CUDAGraph where graphs do not exist: capture runs the region eagerly once; replay cannot
    re-run it, so it raises instead of returning stale outputs."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        self.target = "this target"

    def capture_begin(self, *a: Any, **kw: Any) -> None:
        return None

    def capture_end(self) -> None:
        return None

    def replay(self) -> None:
        raise RuntimeError(
            f"torch.cuda.CUDAGraph.replay: {self.target} has no graph capture, so torchport cannot "
            "replay the captured region; call the captured code directly (or use "
            "torch.cuda.make_graphed_callables, which torchport runs eagerly)"
        )

    def reset(self) -> None:
        return None

    def pool(self) -> None:
        return None


class _HostGraphContext:
    def __init__(self, cuda_graph: _HostGraph, pool: Any = None, stream: Any = None, **kw: Any) -> None:
        self.graph = cuda_graph

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class _HostMemPool:
    """torch.cuda.MemPool where there are no device memory pools: an empty pool."""

    def __init__(self, allocator: Any = None, use_on_oom: bool = False, no_split: bool = False) -> None:
        self.allocator = allocator
        self.id = (0, 0)

    def use_count(self) -> int:
        return 1

    def snapshot(self) -> list[Any]:
        return []


class _NoDevice:
    """torch.cuda.device(i) / device_of(t) on a single-device target: a context manager that does nothing."""

    def __init__(self, device: Any = None) -> None:
        self.idx = 0

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _read_int(path: str) -> Optional[int]:
    try:
        with open(path, encoding="ascii") as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # cgroup v2 writes "max" for no limit


def _meminfo() -> tuple[int, int]:
    """(free, total) bytes of host memory, what torch.cuda.mem_get_info() answers on a host target: total is
    the physical memory, or the cgroup's limit when it is smaller (a container); free is the kernel's
    MemAvailable (memory a new allocation can get without swapping), bounded by what the cgroup has left.
    (0, 0) only where none of these can be read."""
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        total = page * os.sysconf("SC_PHYS_PAGES")
        free = page * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0, 0
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    for limit_path, usage_path in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ):
        limit = _read_int(limit_path)
        if limit is not None and 0 < limit < total:
            total = limit
            used = _read_int(usage_path)
            if used is not None:
                free = min(free, max(0, limit - used))
            break
    return int(min(free, total)), int(total)


# torch.cuda.memory_stats()'s keys. Source: the docstring of torch.cuda.memory_stats in the installed torch
# 2.13 (torch/cuda/memory.py: the core statistics by pool and metric, the event counters) and torch's binding
# that fills them (torch/csrc/cuda/Module.cpp, THCPModule_memoryStats: the count of allocations is
# "allocation", which the docstring calls "allocated"). Left out: max_split_size (a setting, not a count) and
# reserved_bytes_by_private_pools (per pool: there are none).
MEMORY_STAT_NAMES: tuple[str, ...] = (
    "allocation",
    "allocated_bytes",
    "segment",
    "reserved_bytes",
    "active",
    "active_bytes",
    "inactive_split",
    "inactive_split_bytes",
    "requested_bytes",
)
MEMORY_POOLS: tuple[str, ...] = ("all", "large_pool", "small_pool")
MEMORY_METRICS: tuple[str, ...] = ("current", "peak", "allocated", "freed")
MEMORY_COUNTERS: tuple[str, ...] = (
    "num_alloc_retries",
    "num_ooms",
    "num_sync_all_streams",
    "num_device_alloc",
    "num_device_free",
)


def _memory_stats_nested() -> dict[str, Any]:
    """torch.cuda.memory_stats_as_nested_dict() of a device torchport cannot measure: every key torch's CUDA
    allocator reports, each 0 (no device allocator counts anything on a host target)."""
    out: dict[str, Any] = {
        name: {pool: dict.fromkeys(MEMORY_METRICS, 0) for pool in MEMORY_POOLS} for name in MEMORY_STAT_NAMES
    }
    for kind in ("oversize_allocations", "oversize_segments"):
        out[kind] = dict.fromkeys(MEMORY_METRICS, 0)
    out.update(dict.fromkeys(MEMORY_COUNTERS, 0))
    return out


def _memory_stats() -> dict[str, Any]:
    """torch.cuda.memory_stats(): the nested statistics flattened with "." as torch.cuda.memory_stats does,
    sorted by key as torch's are."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, obj: Any) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
        else:
            flat[prefix] = obj

    walk("", _memory_stats_nested())
    return dict(sorted(flat.items()))


# Every attribute of torch.cuda's device properties. Source: the installed torch 2.13's torch/_C/__init__.pyi,
# class _CudaDeviceProperties (tests/python/test_runtime_compile.py checks this list against it), plus the
# ones torch's C++ binding adds beyond the stub (pci_*, regs_per_multiprocessor, max_threads_per_block:
# unverified on this CPU build, harmless when absent there).
PROPERTY_NAMES: tuple[str, ...] = (
    "name",
    "major",
    "minor",
    "multi_processor_count",
    "total_memory",
    "is_integrated",
    "is_multi_gpu_board",
    "max_threads_per_multi_processor",
    "gcnArchName",
    "warp_size",
    "uuid",
    "L2_cache_size",
    "clock_rate",
    "memory_clock_rate",
    "memory_bus_width",
    "shared_memory_per_block",
    "shared_memory_per_multiprocessor",
    "shared_memory_per_block_optin",
    "regs_per_multiprocessor",
    "max_threads_per_block",
    "pci_bus_id",
    "pci_device_id",
    "pci_domain_id",
)


def _property_names() -> tuple[str, ...]:
    cls = getattr(torch._C, "_CudaDeviceProperties", None)  # on a CUDA build: whatever it has
    extra = tuple(n for n in dir(cls) if not n.startswith("_")) if cls is not None else ()
    return PROPERTY_NAMES + tuple(n for n in extra if n not in PROPERTY_NAMES)


@functools.lru_cache(maxsize=1)
def _host_processor() -> str:
    """The host processor's name, as docs/runtime.md promises for get_device_name() on a host target:
    /proc/cpuinfo's `model name` on Linux (platform.processor() is empty there, and platform.machine() is the
    architecture, `x86_64`, not a name), else what platform says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _properties(s: Session) -> Any:
    """torch.cuda.get_device_properties() for a host target: every attribute torch's CUDA properties have
    (so code that reads one never fails half-way), host values where they exist, 0 / "" elsewhere."""
    free, total = _meminfo()
    known: dict[str, Any] = {
        "name": _host_processor() or s.target.device_type,
        "total_memory": total,
        "major": 0,
        "minor": 0,
        "multi_processor_count": os.cpu_count() or 1,
        "is_integrated": True,
        "is_multi_gpu_board": False,
        "uuid": "",
        "gcnArchName": "",
        "warp_size": 1,
    }
    ns = types.SimpleNamespace()
    for n in _property_names():
        setattr(ns, n, known.get(n, 0))
    for n, v in known.items():
        setattr(ns, n, v)
    return ns


def _emulations(s: Session) -> dict[str, tuple[Callable[..., Any], str, str]]:
    """name -> (function, class, why) for names the device module does not have."""
    dst = s.target.device_type
    no_alloc = f"{dst} has no device caching allocator: returns 0"
    one_gen = f"{dst} tensors use torch's default generator: seeds/states apply to it"

    def zero(*a: Any, **k: Any) -> int:
        return 0

    def nothing(*a: Any, **k: Any) -> None:
        return None

    def rng_all(*a: Any, **k: Any) -> list[torch.Tensor]:
        return [torch.get_rng_state()]

    def set_rng_all(states: Any) -> None:
        torch.set_rng_state(list(states)[0])

    def manual_seed(seed: int) -> None:
        torch.random.default_generator.manual_seed(int(seed))

    def seed() -> None:
        torch.random.default_generator.seed()

    def summary(*a: Any, **k: Any) -> str:
        return f"torchport: {dst} has no device allocator statistics\n"

    return {
        "device_count": (lambda: 1, MODIFIED, f"{dst} counts as one device"),
        "current_device": (lambda: 0, MODIFIED, f"{dst} is device 0"),
        "set_device": (nothing, MODIFIED, f"{dst} has one device"),
        "get_device_name": (lambda d=None: _properties(s).name, MODIFIED, f"the {dst} name"),
        "get_device_properties": (
            lambda d=None: _properties(s),
            MISMATCH,
            f"{dst} properties, major=minor=0",
        ),
        "get_device_capability": (lambda d=None: (0, 0), MISMATCH, f"{dst} has no CUDA capability: (0, 0)"),
        "is_initialized": (lambda: True, MATCH, ""),
        "init": (nothing, MATCH, ""),
        "ipc_collect": (nothing, MODIFIED, "no-op"),
        "get_arch_list": (lambda: [], MISMATCH, "no CUDA architectures"),
        "list_gpu_processes": (lambda d=None: "no GPU processes (torchport)", MISMATCH, "no GPU"),
        "is_bf16_supported": (lambda *a, **k: True, MODIFIED, f"{dst} computes bfloat16"),
        "utilization": (zero, MISMATCH, "no utilization counter"),
        "empty_cache": (nothing, MODIFIED, "no cache to empty"),
        # host memory, the same total as get_device_properties().total_memory (issue 33: (0, 0) made
        # `1 - free / total` divide by zero)
        "mem_get_info": (
            lambda d=None: _meminfo(),
            MODIFIED,
            f"{dst} has no device memory: (free, total) of host memory (MemAvailable and physical memory, or "
            "the cgroup limit), as get_device_properties().total_memory",
        ),
        "memory_allocated": (zero, MISMATCH, no_alloc),
        "max_memory_allocated": (zero, MISMATCH, no_alloc),
        "memory_reserved": (zero, MISMATCH, no_alloc),
        "max_memory_reserved": (zero, MISMATCH, no_alloc),
        "memory_cached": (zero, MISMATCH, no_alloc),
        "max_memory_cached": (zero, MISMATCH, no_alloc),
        "memory_stats": (
            lambda d=None: _memory_stats(),
            MISMATCH,
            f"{dst} has no device allocator statistics: every key torch.cuda reports, each 0",
        ),
        "memory_summary": (summary, MISMATCH, "no allocator statistics"),
        "memory_snapshot": (lambda *a, **k: [], MISMATCH, "no allocator statistics"),
        "reset_peak_memory_stats": (nothing, MODIFIED, "no-op"),
        "reset_max_memory_allocated": (nothing, MODIFIED, "no-op"),
        "reset_max_memory_cached": (nothing, MODIFIED, "no-op"),
        "reset_accumulated_memory_stats": (nothing, MODIFIED, "no-op"),
        "set_per_process_memory_fraction": (nothing, MISMATCH, f"no memory limit is enforced on {dst}"),
        "manual_seed": (manual_seed, MODIFIED, one_gen),
        "manual_seed_all": (manual_seed, MODIFIED, one_gen),
        "seed": (seed, MODIFIED, one_gen),
        "seed_all": (seed, MODIFIED, one_gen),
        "initial_seed": (lambda: torch.initial_seed(), MODIFIED, one_gen),
        "get_rng_state": (lambda d=None: torch.get_rng_state(), MODIFIED, one_gen),
        "set_rng_state": (lambda st, d=None: torch.set_rng_state(st), MODIFIED, one_gen),
        "get_rng_state_all": (rng_all, MODIFIED, one_gen),
        "set_rng_state_all": (set_rng_all, MODIFIED, one_gen),
        "current_stream": (lambda d=None: _DEFAULT_STREAM, MODIFIED, "work runs in order on the host"),
        "default_stream": (lambda d=None: _DEFAULT_STREAM, MODIFIED, "work runs in order on the host"),
        "set_stream": (nothing, MODIFIED, "work runs in order on the host"),
        "stream": (lambda st=None: contextlib.nullcontext(st), MODIFIED, "work runs in order on the host"),
        "is_current_stream_capturing": (lambda: False, MATCH, ""),
        "graph_pool_handle": (lambda: None, MODIFIED, "no graph memory pools"),
        "make_graphed_callables": (
            lambda callables, *a, **k: callables,
            MODIFIED,
            f"no graphs on {dst}: the callables run eagerly (same results)",
        ),
        "is_tf32_supported": (lambda *a, **k: False, MODIFIED, f"{dst} has no TF32"),
        "clock_rate": (zero, MISMATCH, "no device clock counter"),
        "temperature": (zero, MISMATCH, "no device sensor"),
        "power_draw": (zero, MISMATCH, "no device sensor"),
        "can_device_access_peer": (lambda d=None, p=None: False, MODIFIED, f"{dst} has one device: no peer"),
        "get_sync_debug_mode": (zero, MODIFIED, f"{dst} work never synchronizes implicitly with a device"),
        "set_sync_debug_mode": (nothing, MODIFIED, f"{dst} work never synchronizes implicitly with a device"),
        "get_gencode_flags": (lambda: "", MISMATCH, "no CUDA architectures"),
        "memory_stats_as_nested_dict": (
            lambda d=None: _memory_stats_nested(),
            MISMATCH,
            f"{dst} has no device allocator statistics: every key torch.cuda reports, each 0",
        ),
        "memory_usage": (zero, MISMATCH, no_alloc),
        "device_memory_used": (zero, MISMATCH, no_alloc),
        "get_per_process_memory_fraction": (lambda d=None: 1.0, MISMATCH, f"no memory limit on {dst}: 1.0"),
        "host_memory_stats": (lambda: {}, MISMATCH, f"{dst} has no pinned-host allocator"),
        "host_memory_stats_as_nested_dict": (lambda: {}, MISMATCH, f"{dst} has no pinned-host allocator"),
        "reset_accumulated_host_memory_stats": (nothing, MODIFIED, "no-op"),
        "reset_peak_host_memory_stats": (nothing, MODIFIED, "no-op"),
        "caching_allocator_enable": (nothing, MODIFIED, f"{dst} has no device caching allocator"),
        "caching_allocator_disabled": (
            lambda: contextlib.nullcontext(),
            MODIFIED,
            f"{dst} has no device caching allocator",
        ),
        "get_allocator_backend": (lambda: "native", MISMATCH, f"{dst} has no device allocator"),
        "use_mem_pool": (
            lambda pool=None, device=None: contextlib.nullcontext(),
            MODIFIED,
            f"{dst} has no device memory pools",
        ),
    }


def _capability_or_zero(
    impl: Callable[..., Any], module: str, env: str
) -> tuple[Callable[..., Any], str, str, str]:
    """The device module's get_device_capability where the vendor's answers None unless `env` is set
    (data/targets.json device_capability_env: torch_npu): its tuple when it gives one, else (0, 0), as
    `migrate` writes it (the catalogue's if_none), so `torch.cuda.get_device_capability()[0] >= 8` takes
    its fallback path instead of raising TypeError. Logged mismatch: (0, 0) is no capability."""

    def get_device_capability(device: Any = None) -> Any:
        got = impl(device)
        return (0, 0) if got is None else got

    why = f"{module}.get_device_capability() is None unless {env} is set: (0, 0) then, as migrate writes"
    return get_device_capability, MISMATCH, why, ""


def resolve(s: Session, name: str) -> tuple[Optional[Callable[..., Any]], str, str, str]:
    """(implementation, class, why, shown name) for torch.cuda.<name> on the session's target: the device
    module's function of the same name when it has one, else our emulation, else None (an error when called).
    `shown` is "" for an emulation (the log shows the value it returned)."""
    dev = s.devmod
    if not (s.is_cpu and name in _CPU_OWN):
        impl = getattr(dev, name, None)
        if impl is not None and name == "get_device_capability" and s.target.device_capability_env:
            return _capability_or_zero(impl, s.target.device_module, s.target.device_capability_env)
        if impl is not None:
            return impl, MATCH, "", f"{s.target.device_module}.{name}"
    emul = s.__dict__.get("_cuda_emulations")
    if emul is None:
        emul = s.__dict__["_cuda_emulations"] = _emulations(s)
    if name in emul:
        fn, cls, why = emul[name]
        return fn, cls, why, ""
    return None, MISMATCH, f"{s.target.device_module} has no {name}", ""


def answers_for_target(s: Session, depth: int) -> bool:
    """Whether is_available()/device_count()/Tensor.is_cuda answer for the target (True) or tell the truth
    about CUDA (False) for the caller `depth` frames above this one: --cuda-available and the caller rules of
    data/runtime/callers.json (torch's internals always get the truth)."""
    return bool(s.callers.sees_target(depth + 1))


# torch.cuda questions whose callers in torch's internals (inductor, dynamo) get the real answer: told about
# an emulated device they would generate code for it. The user's code gets the emulation.
TRUTH_FOR_INTERNALS = ("get_device_properties", "get_device_capability", "get_device_name")


def install(s: Session) -> None:
    from torchport.runtime._callers import CallerPolicy

    cuda = torch.cuda
    p = s.patcher
    log = s.log
    dev = s.devmod
    s.callers = CallerPolicy(s.cuda_available, s.target.name)
    dst = s.target.device_type
    modname = s.target.device_module

    for name, pos in FUNCTIONS.items():
        if not hasattr(cuda, name) or name == "device_count":
            continue
        impl, cls, why, shown = resolve(s, name)
        # the call site is the caller of the wrapper, or of _truth_for_internals' wrapper around it
        w = _redirect(s, name, pos, impl, cls, why, shown, 2 if name in TRUTH_FOR_INTERNALS else 1)
        if name in TRUTH_FOR_INTERNALS:
            w = _truth_for_internals(s, getattr(cuda, name), w)
        p.set(cuda, name, w)

    # is_available: the truth by default (see docs/runtime.md); --cuda-available=target|user. device_count and
    # Tensor.is_cuda (in _args) give the same answer as is_available in every mode.
    orig_avail = cuda.is_available
    orig_count = cuda.device_count
    count_impl, count_cls, count_why, count_shown = resolve(s, "device_count")
    if s.is_cpu:
        truth_cls, truth_why = MATCH, "the truth, the default: there is no CUDA, and cpu is what runs"
    else:
        truth_cls, truth_why = (
            MISMATCH,
            f"the truth, the default: no CUDA here, so code such as "
            f"`'cuda' if torch.cuda.is_available() else 'cpu'` runs on cpu, not on {dst}; "
            "use --cuda-available=target, or torchport.runtime.is_cuda_device()",
        )

    def target_available() -> bool:
        return True if s.is_cpu else bool(dev.is_available())

    forced = s.callers.truth_forced

    def is_available() -> bool:
        if forced(1):  # torch's internals (callers.json): the truth, not the user's call site: not logged
            return bool(orig_avail())
        if not answers_for_target(s, 1):
            answer = orig_avail()
            if s.cuda_available == "user":
                log.hit(
                    "torch.cuda.is_available", "torch.cuda.is_available()", repr(answer), MATCH, "library"
                )
            else:
                log.hit(
                    "torch.cuda.is_available", "torch.cuda.is_available()", repr(answer), truth_cls, truth_why
                )
            return answer
        answer = target_available()
        log.hit(
            "torch.cuda.is_available",
            "torch.cuda.is_available()",
            f"{modname}.is_available() = {answer}",
            MODIFIED,
            f"answers for {dst} (--cuda-available={s.cuda_available})",
        )
        return answer

    def device_count() -> int:
        if forced(1):
            return int(orig_count())
        if not answers_for_target(s, 1):
            answer = int(orig_count())
            log.hit(
                "torch.cuda.device_count",
                "torch.cuda.device_count()",
                repr(answer),
                MATCH,
                "the truth, like torch.cuda.is_available()",
            )
            return answer
        assert count_impl is not None
        answer = int(count_impl())
        log.hit(
            "torch.cuda.device_count",
            "torch.cuda.device_count()",
            f"{count_shown}() = {answer}" if count_shown else repr(answer),
            count_cls if count_cls != MATCH else MODIFIED,
            count_why or f"counts {dst} devices (--cuda-available={s.cuda_available})",
        )
        return answer

    p.set(cuda, "is_available", is_available)
    p.set(cuda, "device_count", device_count)

    for name in CLASSES:
        if not hasattr(cuda, name):
            continue
        p.set(cuda, name, _class_redirect(s, name))

    # default_generators: a tuple attribute, not a function
    if s.is_cpu or not hasattr(dev, "default_generators"):
        p.set(cuda, "default_generators", (torch.default_generator,))
    else:
        p.set(cuda, "default_generators", dev.default_generators)

    # typed tensors: torch.cuda.FloatTensor(...) -> the target's; DoubleTensor keeps float64 (policy applies)
    for name in TYPED_TENSORS:
        if not hasattr(cuda, name):
            continue
        base = getattr(torch, name) if s.is_cpu else getattr(dev, name, None)
        p.set(cuda, name, _typed_tensor(s, name, base))

    # nvtx ranges become profiler record_function ranges on every target (they show in torch.profiler traces)
    import torch.cuda.nvtx as nvtx

    stack: list[Any] = []

    def range_push(msg: str) -> int:
        rf = torch.autograd.profiler.record_function(msg)
        rf.__enter__()
        stack.append(rf)
        return len(stack) - 1

    def range_pop() -> int:
        if stack:
            stack.pop().__exit__(None, None, None)
        return len(stack)

    @contextlib.contextmanager
    def nvtx_range(msg: str, *args: Any, **kwargs: Any) -> Iterator[None]:
        with torch.autograd.profiler.record_function(msg.format(*args, **kwargs) if args or kwargs else msg):
            yield

    nvtx_impl: dict[str, Callable[..., Any]] = {
        "range_push": range_push,
        "range_pop": range_pop,
        "range": nvtx_range,
        "mark": lambda msg: None,
        "range_start": lambda msg: 0,
        "range_end": lambda rid: None,
    }
    for name in NVTX:
        if hasattr(nvtx, name):
            p.set(
                nvtx, name, _logged(s, f"torch.cuda.nvtx.{name}", nvtx_impl[name], MODIFIED, "profiler range")
            )

    _install_generic_streams(s)


def _install_generic_streams(s: Session) -> None:
    """torch.Stream(device="cuda") / torch.Event(device="cuda"): the target's stream and event (on a host
    target torchport's _HostStream/_HostEvent, themselves torch.Stream/torch.Event of the cpu device);
    isinstance checks against torch.Stream/torch.Event still see torch's classes. Tensor.record_stream of a
    host stream: a no-op, logged (torch's cpu tensors have no record_stream kernel; nothing is needed: cpu
    work runs in order, so no other stream can still be using the memory when Python frees it)."""
    p = s.patcher
    hit = s.log.hit
    mapf = s.mapper.map
    dst = s.target.device_type
    host = s.is_cpu or not s.target.has_device_index
    sites_get = s.log.sites.get
    track = s.log.track
    getframe = sys._getframe

    for name, host_cls in (("Stream", _HostStream), ("Event", _HostEvent)):
        orig = getattr(torch, name, None)
        if not isinstance(orig, type):
            continue
        api = f"torch.{name}"

        def map_args(
            a: tuple[Any, ...], k: dict[str, Any], _name: str = name
        ) -> tuple[tuple[Any, ...], dict[str, Any]]:
            if "device" in k:
                k = {**k, "device": mapf(k["device"])}
            elif a and type(a[0]) is not int:
                a = (mapf(a[0]), *a[1:])
            return a, k

        def make(
            *a: Any, _orig: Any = orig, _host: Any = host_cls, _api: str = api, _map: Any = map_args, **k: Any
        ) -> Any:
            d = k.get("device", a[0] if a else None)
            is_cuda = s.live and d is not None and str(d).startswith("cuda")
            if not is_cuda:
                return _orig(*a, **k)
            if host:
                rest = {n: v for n, v in k.items() if n != "device"}
                out = _host(*a[1:], **rest)
                shown, cls_, why = (
                    f"torchport.{_host.__name__}",
                    MODIFIED,
                    f"{dst}: work runs in order on the host",
                )
                na, nk = a[1:], rest
            else:
                na, nk = _map(a, k)
                out = _orig(*na, **nk)
                shown, cls_, why = _api, MATCH, ""
            if track:
                f = getframe(2)  # make <- _Meta.__call__ <- user
                site = sites_get((f.f_code, f.f_lineno, _api))
                if site is None:
                    hit(_api, (CALL, _api, a, k), (CALL, shown, na, nk), cls_, why, 3)
                else:
                    site.count += 1
            return out

        p.set(torch, name, _proxy_class(name, orig, make, map_args, module="torch"))

    orig_record = torch.Tensor.record_stream
    why_rec = (
        f"{dst} work runs in order on the host: nothing to record (no other stream can still use the memory "
        "when it is freed)"
    )

    def record_stream(self: torch.Tensor, stream: Any) -> None:
        if isinstance(stream, _HostStream):
            hit(
                "Tensor.record_stream",
                (CALL, "Tensor.record_stream", (stream,), None),
                "nothing",
                MODIFIED,
                why_rec,
            )
            return None
        return orig_record(self, stream)

    p.set(torch.Tensor, "record_stream", record_stream)


def _truth_for_internals(s: Session, orig: Callable[..., Any], redirected: Callable[..., Any]) -> Any:
    forced = s.callers.truth_forced

    def wrapper(*a: Any, **k: Any) -> Any:
        if forced(1):
            return orig(*a, **k)
        return redirected(*a, **k)

    return wrapper  # torch's name, doc and __wrapped__: Patcher.set gives them (keep_attributes)


def _logged(s: Session, api: str, fn: Callable[..., Any], cls: str, why: str) -> Callable[..., Any]:
    hit = s.log.hit
    sites_get = s.log.sites.get
    track = s.log.track
    getframe = sys._getframe
    shown = "torch.autograd.profiler.record_function" if api.endswith(("range_push", "range")) else ""

    def wrapper(*a: Any, **k: Any) -> Any:
        out = fn(*a, **k)
        if track:
            f = getframe(1)
            site = sites_get((f.f_code, f.f_lineno, api))
            if site is None:
                hit(api, (CALL, api, a, k), (CALL, shown, a[:1]) if shown else (VALUE, out), cls, why)
            else:
                site.count += 1
        return out

    wrapper.__name__ = api.rsplit(".", 1)[-1]
    return wrapper


def _redirect(
    s: Session,
    name: str,
    pos: Optional[int],
    impl: Optional[Callable[..., Any]],
    cls: str,
    why: str,
    shown: str,
    depth: int = 1,
) -> Callable[..., Any]:
    """torch.cuda.<name>: device arguments mapped, then the device module's function (`shown`) or an
    emulation (shown ""). The log line shows the call with its arguments and, for an emulation, the value it
    returned."""
    api = f"torch.cuda.{name}"
    hit = s.log.hit
    log_at = s.log.at
    sites_get = s.log.sites.get
    track = s.log.track
    getframe = sys._getframe
    mapf = s.mapper.map
    target = s.target
    # torch.manual_seed()/torch.seed() call torch.cuda.manual_seed_all() themselves: not the user's call site
    quiet_from_torch = name in ("manual_seed_all", "seed_all")

    def emit(traced: Any, a0: tuple[Any, ...], k0: dict[str, Any], after: Any) -> None:
        """A new site's line: at the caller (emit <- wrapper [<- truth wrapper] <- user), or at the line
        dynamo is tracing."""
        if traced is None:
            hit(api, (CALL, api, a0, k0), after, cls, why, depth + 2)
        else:
            log_at(traced[0], traced[1], api, (CALL, api, a0, k0), after, cls, why)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        a0, k0 = args, kwargs
        if pos is not None:
            if len(args) > pos:
                d = args[pos]
                nd = mapf(d) if type(d) is not int else d  # ints stay ordinals for the device module
                if nd is not d:
                    args = (*args[:pos], nd, *args[pos + 1 :])
            d = kwargs.get("device")
            if d is not None and type(d) is not int:
                kwargs = {**kwargs, "device": mapf(d)}
        new = False
        traced = None
        if track:  # a seen call site only counts; a new one is rendered once, with its arguments
            f = getframe(depth)
            if depth == 2 and f.f_code.co_filename.startswith(_DYNAMO):
                traced = _traced_line()  # dynamo constant-folds it while tracing: the user's line
            if traced is not None:
                new = True  # log.at() counts a seen site itself
            elif not (quiet_from_torch and f.f_code.co_filename == _TORCH_RANDOM):
                site = sites_get((f.f_code, f.f_lineno, api))
                if site is None:
                    new = True
                else:
                    site.count += 1
        if impl is None:
            if new:
                emit(traced, a0, k0, "error")
            raise NotImplementedError(f"{api} has no equivalent on target {target.name} ({why}) [torchport]")
        if shown:  # the device module's function: the line says what it was called with
            if new:
                emit(traced, a0, k0, (CALL, shown, args, kwargs))
            return impl(*args, **kwargs)
        out = impl(*args, **kwargs)
        if new:  # an emulation: the line gives the value it returned
            emit(traced, a0, k0, (VALUE, out))
        return out

    if not track and impl is not None:
        # nothing logged: a call without arguments (torch.cuda.current_stream(), synchronize(), ...) goes
        # straight to the implementation (bench/runtime_bench.py)
        general = wrapper

        def fast(*args: Any, **kwargs: Any) -> Any:
            if args or kwargs:
                return general(*args, **kwargs)
            return impl()

        wrapper = fast
    return wrapper  # torch's name, doc and __wrapped__: Patcher.set gives them (keep_attributes)


def _proxy_class(
    name: str, impl: Any, make: Callable[..., Any], map_args: Callable[..., Any], module: str = "torch.cuda"
) -> type:
    """A class standing for torch.cuda.<name>: calling it returns `make(...)` (an instance of the target's
    class), and isinstance/issubclass checks against it see the target's class, so `isinstance(s,
    torch.cuda.Stream)` holds for streams from torch.cuda.Stream() and torch.cuda.current_stream() alike."""
    base: type = impl if isinstance(impl, type) else type(f"_{name}Unavailable", (), {})

    busy = threading.local()  # ABCMeta bases ask their subclasses (the proxy) again: answer that once

    class _Meta(type(base)):  # type: ignore[misc]
        def __instancecheck__(cls, obj: Any) -> bool:
            if cls is not proxy or getattr(busy, "on", False):
                return bool(type.__instancecheck__(cls, obj))
            busy.on = True
            try:
                return isinstance(obj, base)
            finally:
                busy.on = False

        def __subclasscheck__(cls, sub: type) -> bool:
            if cls is not proxy or getattr(busy, "on", False):
                return bool(type.__subclasscheck__(cls, sub))
            busy.on = True
            try:
                return issubclass(sub, base)
            finally:
                busy.on = False

        def __call__(cls, *a: Any, **k: Any) -> Any:
            if cls is proxy:
                return make(*a, **k)
            a, k = map_args(a, k)  # a user subclass of torch.cuda.<name>: built normally, devices mapped
            return super().__call__(*a, **k)

    try:
        proxy = _Meta(name, (base,), {"__module__": module, "__doc__": getattr(impl, "__doc__", None)})
    except TypeError:  # a base that cannot be subclassed: isinstance still works through the metaclass
        base = impl if isinstance(impl, type) else base
        proxy = _Meta(name, (), {"__module__": module})
    proxy.__qualname__ = name
    return proxy


def _host_class(name: str, dst: str) -> tuple[Any, str, str, str]:
    """torchport's host emulation of the torch.cuda class `name`: (class, log class, why, shown)."""
    own: dict[str, Any] = {
        "Stream": _HostStream,
        "Event": _HostEvent,
        "StreamContext": contextlib.nullcontext,
        "device": _NoDevice,
        "device_of": _NoDevice,
        "CUDAGraph": _HostGraph,
        "graph": _HostGraphContext,
        "MemPool": _HostMemPool,
    }
    impl = own[name]
    if name in ("Stream", "Event", "StreamContext"):
        cls_, why = MODIFIED, f"{dst}: work runs in order on the host"
    elif name in ("device", "device_of"):
        cls_, why = MODIFIED, f"{dst} has one device"
    elif name == "MemPool":
        cls_, why = MODIFIED, f"{dst} has no device memory pools: a pool with no memory"
    else:
        cls_, why = MISMATCH, f"{dst} has no graph capture: replay() raises"
    return impl, cls_, why, f"torchport.{impl.__name__}"


def _built_class(obj: Any) -> Any:
    """`obj` unless it is one of torch's placeholders for a backend this build lacks
    (torch._utils._dummy_type: torch 2.15's torch.mps.Stream on Linux, whose construction raises "Tried to
    instantiate dummy base class"), else None."""
    if obj is None:
        return None
    new = getattr(obj, "__new__", None)
    if getattr(new, "__qualname__", "").startswith("_dummy_type."):
        return None
    return obj


def _class_redirect(s: Session, name: str) -> Any:
    dst = s.target.device_type
    dev = s.devmod
    hit = s.log.hit
    sites_get = s.log.sites.get
    track = s.log.track
    getframe = sys._getframe
    mapf = s.mapper.map
    api = f"torch.cuda.{name}"
    impl: Any
    if s.is_cpu or not s.target.has_device_index:
        impl, cls_, why, shown = _host_class(name, dst)
        own = _built_class(getattr(dev, name, None))
        if not s.is_cpu and name in ("Stream", "Event", "StreamContext") and own is not None:
            impl, cls_, why, shown = getattr(dev, name), MATCH, "", f"{s.target.device_module}.{name}"
    else:
        lookup = f"{dst.upper()}Graph" if name == "CUDAGraph" else name
        impl = _built_class(getattr(dev, lookup, None))
        cls_, why, shown = MATCH, "", f"{s.target.device_module}.{lookup}"
        if impl is None:  # the coverage table: a class the device module lacks does what cpu does
            impl, cls_, why, shown = _host_class(name, dst)
            why = f"{s.target.device_module} has no {lookup}: {why}"
    map_first = name in ("Stream", "device") and s.target.has_device_index  # the first argument is a device

    def map_args(a: tuple[Any, ...], k: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if "device" in k:
            k = {**k, "device": mapf(k["device"])}
        if map_first and a and type(a[0]) is not int:
            a = (mapf(a[0]), *a[1:])
        return a, k

    orig_cls = getattr(torch.cuda, name)

    def make(*a: Any, **k: Any) -> Any:
        if not s.live:  # captured before disable(): the original class
            return orig_cls(*a, **k)
        na, nk = map_args(a, k)
        if track:
            f = getframe(2)  # the user's frame: make <- _Meta.__call__ <- user
            site = sites_get((f.f_code, f.f_lineno, api))
            if site is None:
                hit(api, (CALL, api, a, k), (CALL, shown, na, nk), cls_, why, 3)
            else:
                site.count += 1
        return impl(*na, **nk)

    return _proxy_class(name, impl, make, map_args)


def _typed_tensor(s: Session, name: str, base: Any) -> Any:
    api = f"torch.cuda.{name}"
    hit = s.log.hit
    shown = f"torch.{name}" if s.is_cpu else f"{s.target.device_module}.{name}"

    def typed(*a: Any, **k: Any) -> Any:
        if name == "DoubleTensor" and not s.target.float64:
            s.float64(api)
        hit(
            api,
            (CALL, api, a, k),
            (CALL, shown, a, k) if base is not None else "error",
            MATCH if base is not None else MISMATCH,
            "" if base is not None else "missing",
        )
        if base is None:
            raise NotImplementedError(f"{api} has no equivalent on target {s.target.name} [torchport]")
        return base(*a, **k)

    typed.__name__ = name
    return typed
