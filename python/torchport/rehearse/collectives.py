"""The vendor's collective backend name (hccl / cncl / mccl) as a torch.distributed backend that runs on gloo.

Device memory is host memory, so each collective hands gloo CPU views of the device tensors (same memory,
no copy) and the results land in the device tensors.

The gloo backends live until the process ends (_KEPT): ProcessGroupGloo's destructor joins its worker threads
while its caller holds the GIL (pybind's dealloc of the group, of DDP's Reducer that held it last, or
destroy_process_group dropping the last reference), and a worker that has just finished a collective releases
the work's tensors (ProcessGroupGloo::runLoop). Each of those tensors has a Python object (the CPU views are
made in Python), and in torch 2.13 releasing a C++ reference to such a tensor (refcount 2 to 1,
c10/util/intrusive_ptr.h) decrefs its Python object, so the worker waits for the GIL: a deadlock whenever the
destructor starts before the worker got the GIL. Measured: 2 of 10 `ddp_train` runs with 2 spawned ranks hung
after their last step; the native stacks of one: a rank's main thread in ~ProcessGroupGloo (thread::join,
under ~Reducer) and a gloo worker in ~AsyncAllreduceWork waiting for the GIL (docs/rehearse.md). Every way
a rehearsal ends skips the C++ teardown (os._exit: torchport._leave, multiprocessing's forked children), so a
kept backend is never destroyed; what it costs is its threads and connections until then, once per group.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Callable

import torch
import torch.distributed as dist


def _cpu(x: Any) -> Any:
    from torchport.rehearse import session as state

    if isinstance(x, torch.Tensor):
        return state.ext().as_cpu(x)
    if isinstance(x, (list, tuple)):
        return [_cpu(y) for y in x]
    return x


_KEPT: list[Any] = []  # every gloo backend made here, never destroyed before the process ends (above)


class HostProcessGroup(dist.ProcessGroup):
    """A process group named after the vendor's backend, forwarding to a gloo backend on CPU views."""

    def __init__(self, name: str, store: Any, rank: int, size: int, timeout: timedelta) -> None:
        super().__init__(rank, size)
        self._name = name
        self._gloo = dist.ProcessGroupGloo(store, rank, size, timeout)
        _KEPT.append(self._gloo)
        # A ProcessGroup keeps its name on its backends: without one, `group_name` raises
        # "ProcessGroup name not set", and DeviceMesh (init_device_mesh, DTensor, FSDP2) needs it. The
        # collectives themselves stay the Python methods below (the C++ side calls them as overrides).
        types = dist.ProcessGroup.BackendType
        self._register_backend(torch.device("cpu"), types.GLOO, self._gloo)
        device = torch._C._get_privateuse1_backend_name()
        if device != "privateuseone":
            self._register_backend(torch.device(device), types.CUSTOM, self._gloo)
        # torch 2.15 asks a process group for its default backend type (UNDEFINED raises "Could not find the
        # default backend type 0"); the vendors' groups are a custom backend.
        self._set_default_backend(types.CUSTOM if device != "privateuseone" else types.GLOO)

    def getBackendName(self) -> str:  # noqa: N802 (torch's name)
        return self._name

    def name(self) -> str:
        return self._name

    def allreduce(self, tensors: Any, opts: Any = None) -> Any:
        if opts is None:
            opts = dist.AllreduceOptions()
        elif not isinstance(opts, dist.AllreduceOptions):
            op, opts = opts, dist.AllreduceOptions()
            opts.reduceOp = op
        return self._gloo.allreduce(_cpu(tensors), opts)

    def allreduce_coalesced(self, tensors: Any, opts: Any = None) -> Any:
        return self._gloo.allreduce_coalesced(_cpu(tensors), opts or dist.AllreduceCoalescedOptions())

    def broadcast(self, tensors: Any, opts: Any = None) -> Any:
        return self._gloo.broadcast(_cpu(tensors), opts or dist.BroadcastOptions())

    def allgather(self, output_tensors: Any, input_tensors: Any, opts: Any = None) -> Any:
        return self._gloo.allgather(
            _cpu(output_tensors), _cpu(input_tensors), opts or dist.AllgatherOptions()
        )

    def _allgather_base(self, output: Any, input: Any, opts: Any = None) -> Any:
        return self._gloo._allgather_base(_cpu(output), _cpu(input), opts or dist.AllgatherOptions())

    def reduce_scatter(self, output_tensors: Any, input_tensors: Any, opts: Any = None) -> Any:
        return self._gloo.reduce_scatter(
            _cpu(output_tensors), _cpu(input_tensors), opts or dist.ReduceScatterOptions()
        )

    def _reduce_scatter_base(self, output: Any, input: Any, opts: Any = None) -> Any:
        return self._gloo._reduce_scatter_base(_cpu(output), _cpu(input), opts or dist.ReduceScatterOptions())

    def reduce(self, tensors: Any, opts: Any = None) -> Any:
        return self._gloo.reduce(_cpu(tensors), opts or dist.ReduceOptions())

    def gather(self, output_tensors: Any, input_tensors: Any, opts: Any = None) -> Any:
        return self._gloo.gather(_cpu(output_tensors), _cpu(input_tensors), opts or dist.GatherOptions())

    def scatter(self, output_tensors: Any, input_tensors: Any, opts: Any = None) -> Any:
        return self._gloo.scatter(_cpu(output_tensors), _cpu(input_tensors), opts or dist.ScatterOptions())

    def alltoall_base(self, output: Any, input: Any, out_split: Any, in_split: Any, opts: Any = None) -> Any:
        return self._gloo.alltoall_base(
            _cpu(output), _cpu(input), out_split, in_split, opts or dist.AllToAllOptions()
        )

    def send(self, tensors: Any, dst: int, tag: int = 0) -> Any:
        return self._gloo.send(_cpu(tensors), dst, tag)

    def recv(self, tensors: Any, src: int, tag: int = 0) -> Any:
        return self._gloo.recv(_cpu(tensors), src, tag)

    def barrier(self, opts: Any = None) -> Any:
        return self._gloo.barrier(opts or dist.BarrierOptions())


def make_creator(name: str) -> Callable[..., HostProcessGroup]:
    def create(store: Any, rank: int, size: int, timeout: timedelta) -> HostProcessGroup:
        return HostProcessGroup(name, store, rank, size, timeout)

    return create
