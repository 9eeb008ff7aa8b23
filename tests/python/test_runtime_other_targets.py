"""The accelerator code paths without their hardware: `enable("xpu"|"mps", check=False)` installs the same
redirect as on a machine with the device, and the decisions are checked at the point where they reach the
device module, torch.distributed, FSDP, the profiler and the DataLoader. The device module's functions and
classes that would need the device are replaced by recorders first (pytest's monkeypatch), so each test sees
the exact call the target would receive. npu has no in-tree device module (torch_npu is not installed here):
its decisions are tested on the data that drives them."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d
from torch.profiler import ProfilerActivity as PA

from runtime_testlib import enabled, sites
from torchport.runtime import _cuda_ns
from torchport.runtime._profiler import map_activities
from torchport.targets import TARGETS


class Recorder:
    """Stands for a device-module function: remembers its arguments, returns `value`."""

    def __init__(self, value: Any = None) -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.value = value

    def __call__(self, *a: Any, **k: Any) -> Any:
        self.calls.append((a, k))
        return self.value


def _fake_class(name: str) -> type:
    """Stands for a device-module class (torch.xpu.Stream, ...): keeps its constructor arguments."""

    def __init__(self: Any, *a: Any, **k: Any) -> None:
        self.args, self.kwargs = a, k

    return type(name, (), {"__init__": __init__})


def _line(session: Any, api: str) -> Any:
    found = [x for x in sites(session) if x.api == api]
    assert found, f"no log line for {api}"
    return found[0]


def test_xpu_device_functions_go_to_torch_xpu_with_mapped_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    sync, alloc = Recorder(), Recorder(123)
    monkeypatch.setattr(torch.xpu, "synchronize", sync)
    monkeypatch.setattr(torch.xpu, "memory_allocated", alloc)
    with enabled("xpu", check=False) as s:
        torch.cuda.synchronize("cuda:1")
        torch.cuda.synchronize(device=torch.device("cuda", 2))
        assert torch.cuda.memory_allocated(1) == 123  # the device module's answer, not an emulation
        assert _cuda_ns.resolve(s, "memory_allocated")[3] == "torch.xpu.memory_allocated"
        # a name torch.xpu lacks falls back to the emulation, with its class and reason
        impl, cls, why, shown = _cuda_ns.resolve(s, "ipc_collect")
        assert shown == "" and cls == "modified" and impl is not None
        line = _line(s, "torch.cuda.synchronize").line()
    assert sync.calls == [(("xpu:1",), {}), ((), {"device": torch.device("xpu", 2)})]
    assert alloc.calls == [((1,), {})]  # an int stays an ordinal of the target
    assert "[match] torch.cuda.synchronize('cuda:1') -> torch.xpu.synchronize('xpu:1') | " in line


def test_mps_device_functions_and_emulations(monkeypatch: pytest.MonkeyPatch) -> None:
    sync, seed = Recorder(), Recorder()
    monkeypatch.setattr(torch.mps, "synchronize", sync)
    monkeypatch.setattr(torch.mps, "manual_seed", seed)
    with enabled("mps", check=False) as s:
        torch.cuda.synchronize()
        torch.cuda.manual_seed(7)
        assert torch.cuda.memory_allocated() == 0  # torch.mps has no memory_allocated: emulated
        line = _line(s, "torch.cuda.memory_allocated")
        assert line.cls == "mismatch" and "mps has no device caching allocator" in line.why
        assert line.before == "torch.cuda.memory_allocated()" and line.after == "0"
    assert sync.calls == [((), {})] and seed.calls == [((7,), {})]


def test_xpu_classes_stay_classes(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("Stream", "Event", "device", "XPUGraph"):
        monkeypatch.setattr(torch.xpu, name, _fake_class(f"Xpu{name}"))
    with enabled("xpu", check=False) as s:
        stream = torch.cuda.Stream(device="cuda:1", priority=-1)
        assert isinstance(stream, torch.cuda.Stream)  # was a TypeError: torch.cuda.Stream was a function
        assert isinstance(stream, torch.xpu.Stream)
        assert stream.kwargs == {"device": "xpu:1", "priority": -1}
        assert torch.cuda.Stream(torch.device("cuda", 3)).args == (torch.device("xpu", 3),)
        event = torch.cuda.Event(enable_timing=True)
        assert isinstance(event, torch.cuda.Event) and event.kwargs == {"enable_timing": True}
        assert torch.cuda.device("cuda:1").args == ("xpu:1",)
        assert torch.cuda.device(1).args == (1,)
        assert isinstance(torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph)
        assert issubclass(torch.xpu.Stream, torch.cuda.Stream) and isinstance(torch.cuda.Stream, type)

        class MyStream(torch.cuda.Stream):  # a user subclass: built normally, devices mapped
            pass

        assert MyStream(device="cuda:2").kwargs == {"device": "xpu:2"}
        line = _line(s, "torch.cuda.Stream")
        assert line.before == "torch.cuda.Stream(device='cuda:1', priority=-1)"
        assert line.after == "torch.xpu.Stream(device='xpu:1', priority=-1)" and line.cls == "match"


def test_mps_classes_stay_classes() -> None:
    with enabled("mps", check=False) as s:
        stream = torch.cuda.Stream()
        assert isinstance(stream, torch.cuda.Stream)
        if hasattr(torch.mps, "current_stream") and not torch.backends.mps.is_built():
            # torch 2.15 added torch.mps.current_stream, which the runtime calls as the device module's own
            # function; without an MPS build (this Linux machine) it has no _mps_getCurrentStream to call
            with pytest.raises(AttributeError, match="_mps_getCurrentStream"):
                torch.cuda.current_stream()
        else:
            assert isinstance(torch.cuda.current_stream(), torch.cuda.Stream)  # the default stream too
        assert isinstance(torch.cuda.Event, type) and issubclass(torch.mps.Event, torch.cuda.Event)
        with torch.cuda.device("cuda:1"):  # mps has one device
            pass
        assert _line(s, "torch.cuda.device").cls == "modified"
        assert isinstance(torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph)


def test_profiler_activity_per_target() -> None:
    acts = [PA.CPU, PA.CUDA]
    assert map_activities(acts, TARGETS["xpu"]) == [PA.CPU, PA.XPU]
    assert map_activities(acts, TARGETS["npu"]) == [PA.CPU, PA.PrivateUse1]
    assert map_activities(acts, TARGETS["hpu"]) == [PA.CPU, PA.HPU]
    assert map_activities(acts, TARGETS["mps"]) == [PA.CPU]  # no device activity: dropped
    assert map_activities([PA.CUDA], TARGETS["cpu"]) == [PA.CPU]  # never an empty list
    with enabled("xpu", check=False):
        prof = torch.profiler.profile(activities=[PA.CPU, PA.CUDA])
    assert prof.activities == {PA.CPU, PA.XPU}


def test_dataloader_pin_memory_device() -> None:
    with enabled("xpu", check=False):
        dl = torch.utils.data.DataLoader([1, 2], pin_memory=True, pin_memory_device="cuda:1")
        assert dl.pin_memory_device == "xpu:1" and dl.pin_memory is True
    with enabled("mps", check=False):
        dl = torch.utils.data.DataLoader([1, 2], pin_memory=True, pin_memory_device="cuda:1")
        assert dl.pin_memory_device == "mps"


@pytest.mark.parametrize(
    ("name", "backend", "device_id"), [("xpu", "xccl", torch.device("xpu", 1)), ("mps", "gloo", None)]
)
def test_init_process_group_backend_and_device_id(
    monkeypatch: pytest.MonkeyPatch, name: str, backend: str, device_id: Any
) -> None:
    init = Recorder()
    monkeypatch.setattr(c10d, "init_process_group", init)
    monkeypatch.setattr(dist, "init_process_group", init)
    with enabled(name, check=False):
        dist.init_process_group("nccl", device_id=torch.device("cuda", 1))
        dist.init_process_group(backend="cuda:nccl,cpu:gloo")
    assert init.calls[0] == ((backend,), {"device_id": device_id})
    assert init.calls[1] == ((f"{name}:{backend},cpu:gloo",), {})


@pytest.mark.parametrize(("name", "expected"), [("xpu", torch.device("xpu", 1)), ("mps", None)])
def test_fsdp_device_id(monkeypatch: pytest.MonkeyPatch, name: str, expected: Any) -> None:
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    init = Recorder()
    monkeypatch.setattr(FSDP, "__init__", init)
    with enabled(name, check=False):
        FSDP(torch.nn.Linear(1, 1), device_id=1)
        FSDP(torch.nn.Linear(1, 1), device_id=torch.device("cuda", 1))
    assert [k["device_id"] for _, k in init.calls] == [expected, expected]


def test_is_available_on_an_accelerator_target(monkeypatch: pytest.MonkeyPatch) -> None:
    # the truthful default on xpu: False, logged `mismatch` because `"cuda" if is_available() else "cpu"`
    # quietly runs on cpu; device_count() agrees (0). The target mode answers for torch.xpu.
    with enabled("xpu", check=False) as s:
        assert torch.cuda.is_available() is False and torch.cuda.device_count() == 0
        line = _line(s, "torch.cuda.is_available")
        assert line.cls == "mismatch" and "runs on cpu, not on xpu" in line.why
    monkeypatch.setattr(torch.xpu, "is_available", lambda: True)
    monkeypatch.setattr(torch.xpu, "device_count", lambda: 4)
    with enabled("xpu", check=False, cuda_available="target") as s:
        assert torch.cuda.is_available() is True and torch.cuda.device_count() == 4
        assert _line(s, "torch.cuda.device_count").after == "torch.xpu.device_count() = 4"
