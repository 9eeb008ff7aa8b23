"""Record the aten operators a piece of code executes, at both levels.

- Leaf level: a TorchDispatchMode sees every operator that reaches a kernel (below autograd), with its
  exact overload, its input dtypes and the Python stack, from which the first user frame is taken.
- Composite level: the profiler's RecordFunction events nest every dispatcher call, including the
  CompositeImplicitAutograd operators (`aten::matmul`, `aten::lstm`, `aten::linear`) that are decomposed
  before they reach the mode. Each mode call is wrapped in a marker event (`tp#N`), which joins the two:
  the marker's aten ancestors are the composite operators that call was part of.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode

from torchport._frames import user_site

MARK = "tp#"


@dataclass
class Node:
    """One dispatcher call seen by the profiler, below a recorded leaf (the CPU kernel's own calls)."""

    op: str
    us: float = 0.0  # CPU time of this call, its children included
    children: list[Node] = field(default_factory=list)


class Call:
    """One operator call that reached the dispatch mode."""

    __slots__ = ("seq", "op", "dtypes", "site", "kernel_us", "ancestors", "inner")

    def __init__(self, seq: int, op: str, dtypes: tuple[str, ...], site: Optional[tuple[str, int]]) -> None:
        self.seq = seq
        self.op = op  # "aten::add.Tensor" ("aten::t" for the default overload)
        self.dtypes = dtypes
        self.site = site  # first user frame (file, line)
        self.kernel_us = 0.0  # CPU time of the call itself (profiler), without the tracer's own work
        self.ancestors: tuple[tuple[int, str], ...] = ()  # (event id, op) of enclosing ops, outermost first
        self.inner: list[Node] = []  # operators the CPU kernel called


@dataclass
class Trace:
    calls: list[Call]
    wall_s: float  # wall time of the traced code
    joined: int = 0  # calls found in the profile (fewer when the traced code ran its own profiler)
    # Operator calls per phase: "setup" (before the first module forward: model init, data setup), "steps"
    # (from the first forward to the end of the last optimizer step), "after" (after that step).
    phases: dict[str, int] = field(default_factory=dict)
    window: tuple[int, int] = (0, 0)  # [first, end) call indices of the "steps" phase
    steps_wall_s: float = 0.0  # wall time of the "steps" phase, traced
    steps_wall_est_s: float = 0.0  # the same, less the tracer's estimated own cost per recorded call
    optimizer_steps: int = 0
    optimizers: list[str] = field(default_factory=list)  # optimizer classes stepped ("torch.optim.SGD")
    # aten op -> ops its generic CompositeExplicitAutograd(NonFunctional) kernel calls, for ops that also
    # have a CPU kernel (the CPU trace runs the CPU kernel, so the generic path is probed on meta tensors);
    # None when the probe failed.
    generic: dict[str, Optional[tuple[str, ...]]] = field(default_factory=dict)


_DTYPE_NAMES: dict[Any, str] = {}
_get_dtype = torch._C.TensorBase.dtype.__get__  # the C getter, without Tensor attribute lookup


def _dtype_name(d: Any) -> str:
    n = _DTYPE_NAMES.get(d)
    if n is None:
        n = _DTYPE_NAMES[d] = str(d).replace("torch.", "")
    return n


def _dtypes(args: Any, kwargs: Any) -> tuple[str, ...]:
    """Distinct dtypes of the tensors in args/kwargs (one level into lists), in order of appearance."""
    seen: list[Any] = []
    Tensor = torch.Tensor
    for a in (*args, *kwargs.values()) if kwargs else args:
        if isinstance(a, Tensor):
            d = _get_dtype(a)
            if d not in seen:
                seen.append(d)
        elif isinstance(a, (list, tuple)):
            for y in a:
                if isinstance(y, Tensor):
                    d = _get_dtype(y)
                    if d not in seen:
                        seen.append(d)
    return tuple(_dtype_name(d) for d in seen)


def generic_key(func: Any) -> Any:
    """The DispatchKey of `func`'s generic CompositeExplicitAutograd(NonFunctional) kernel when it also has a
    CPU kernel of its own (so a CPU trace never runs the generic one), else None. A device without a kernel of
    its own runs the generic kernel, not its CPU fallback: the dispatcher prefers it (OperatorEntry.cpp,
    computeDispatchTableEntryWithDebug; `torch._C._dispatch_dump_table` shows it as the PrivateUse1/MPS/XPU
    entry, "[default backend kernel]")."""
    if func.namespace != "aten":
        return None
    name = func.name()
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    try:
        if has(name, "CompositeImplicitAutograd") or not has(name, "CPU"):
            return None
        for key in ("CompositeExplicitAutogradNonFunctional", "CompositeExplicitAutograd"):
            if has(name, key):
                return getattr(torch._C.DispatchKey, key)
    except RuntimeError:
        return None
    return None


# op -> what its generic kernel calls (None: not traceable); kept across traces (it depends on torch only)
_GENERIC: dict[str, Optional[tuple[str, ...]]] = {}
_PROBE_DEPTH = 3
_probe_s = [0.0]  # time spent probing, subtracted from the measured step time


def _to_meta(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return torch.empty_strided(x.size(), x.stride(), dtype=x.dtype, device="meta")
    if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
        return type(x)(_to_meta(y) for y in x)
    if isinstance(x, torch.device):
        return torch.device("meta")
    return x


class _Probe(TorchDispatchMode):
    """Records the operators a generic kernel calls, on meta tensors (no data, no real work)."""

    def __init__(self, depth: int) -> None:
        super().__init__()
        self.depth = depth
        self.ops: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = func.name()
        if func.namespace != "profiler":
            self.ops.append(name)
            if name not in _GENERIC and self.depth < _PROBE_DEPTH:
                key = generic_key(func)
                if key is not None:
                    _probe(func, name, key, args, kwargs or {}, self.depth + 1)
        return func(*args, **(kwargs or {}))


def _probe(func: Any, name: str, key: Any, args: Any, kwargs: dict[str, Any], depth: int = 0) -> None:
    """Run `func`'s generic kernel on meta copies of its arguments and record what it calls."""
    _GENERIC[name] = None  # also guards against recursion
    t0 = time.perf_counter()
    try:
        margs = _to_meta(tuple(args))
        mkw = {k: _to_meta(v) for k, v in kwargs.items()}
        p = _Probe(depth)
        with p:
            func._op_dk(key, *margs, **mkw)
    except Exception:  # data-dependent kernels (.item(), nonzero) cannot run on meta tensors
        return
    finally:
        if depth == 0:
            _probe_s[0] += time.perf_counter() - t0
    _GENERIC[name] = tuple(dict.fromkeys(op for op in p.ops if op != name))


class _Recorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Call] = []
        self._rf = torch._C._profiler._RecordFunctionFast
        self._names: dict[Any, Optional[str]] = {}  # OpOverload -> "aten::add.Tensor", None: not recorded
        self._generic: dict[Any, Any] = {}  # OpOverload -> generic DispatchKey to probe once
        self.generic_seen: set[str] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        try:
            name = self._names[func]
        except KeyError:
            # profiler:: ops are the record_function markers of torch.optim and friends
            name = self._names[func] = None if func.namespace == "profiler" else func.name()
            key = generic_key(func) if name is not None else None
            if key is not None:
                self.generic_seen.add(name)  # type: ignore[arg-type]
                if name not in _GENERIC:
                    _probe(func, name, key, args, kwargs or {})  # type: ignore[arg-type]
        if name is None:
            return func(*args, **(kwargs or {}))
        seq = len(self.calls)
        call = Call(seq, name, _dtypes(args, kwargs), user_site(sys._getframe(1)))
        self.calls.append(call)
        with self._rf(MARK + str(seq)):
            out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor):
            d = _dtype_name(_get_dtype(out))
            if d not in call.dtypes:
                call.dtypes += (d,)
        elif isinstance(out, (tuple, list)):
            extra = _dtypes(out, None)
            if extra and extra != call.dtypes:
                call.dtypes += tuple(d for d in extra if d not in call.dtypes)
        return out


_BACKWARD = "autograd::engine::evaluate_function: "


class _Ev:
    """One profiler event in the rebuilt call tree (cheaper than torch's FunctionEvent objects)."""

    __slots__ = ("name", "end", "us", "parent", "children", "key")

    def __init__(
        self, name: str, end: int, us: float, parent: Optional[_Ev], key: Optional[tuple[int, int]]
    ) -> None:
        self.name = name
        self.end = end
        self.us = us
        self.parent = parent
        self.children: list[_Ev] = []
        # (forward thread, autograd sequence number): set on a forward op that created an autograd node and
        # on the backward event that runs that node, which is how the profiler links the two.
        self.key = key


def _is_op_event(name: str) -> bool:
    return name.count("::") == 1 and not name.startswith(("autograd::", "profiler::"))


def _tree(kineto_events: Any) -> list[_Ev]:
    """Rebuild the nesting of the CPU events from their intervals, per thread. Returns the markers."""
    cpu = torch.autograd.DeviceType.CPU
    per_thread: dict[int, list[tuple[int, int, str, Optional[tuple[int, int]]]]] = {}
    for e in kineto_events:
        if e.device_type() != cpu:
            continue
        name = e.name()
        key: Optional[tuple[int, int]] = None
        if name.startswith(_BACKWARD):
            full = name
            if e.sequence_nr() >= 0:
                key = (e.fwd_thread_id(), e.sequence_nr())
        elif name.startswith(MARK) or _is_op_event(name):
            overload = e.overload_name()
            full = f"{name}.{overload}" if overload else name
            if e.sequence_nr() >= 0:
                key = (e.start_thread_id(), e.sequence_nr())
        else:
            continue
        per_thread.setdefault(e.start_thread_id(), []).append((e.start_ns(), -e.end_ns(), full, key))
    markers: list[_Ev] = []
    for rows in per_thread.values():
        rows.sort(key=lambda r: (r[0], r[1]))
        stack: list[_Ev] = []
        for start, neg_end, name, key in rows:
            while stack and stack[-1].end <= start:
                stack.pop()
            parent = stack[-1] if stack else None
            ev = _Ev(name, -neg_end, (-neg_end - start) / 1000.0, parent, key)
            if parent is not None:
                parent.children.append(ev)
            stack.append(ev)
            if name.startswith(MARK):
                markers.append(ev)
    return markers


def _subtree(e: _Ev) -> list[Node]:
    out: list[Node] = []
    for c in e.children:
        if c.name.startswith((MARK, _BACKWARD)):
            continue
        out.append(Node(c.name, c.us, _subtree(c)))
    return out


def _join(calls: list[Call], kineto_events: Any) -> int:
    """Attach the profiler's view to each call; return how many calls were found in the profile."""
    forward_site: dict[tuple[int, int], tuple[str, int]] = {}
    backward: list[tuple[Call, tuple[int, int]]] = []
    joined: list[tuple[_Ev, Call]] = []
    outer: set[int] = set()  # the outer dispatch event of each recorded call
    for m in _tree(kineto_events):
        try:
            call = calls[int(m.name[len(MARK) :])]
        except (ValueError, IndexError):
            continue
        joined.append((m, call))
        if m.parent is not None and m.parent.name == call.op:
            outer.add(id(m.parent))
    for m, call in joined:
        if m.children:
            call.kernel_us = m.children[0].us
            call.inner = _subtree(m.children[0])
        else:
            call.kernel_us = m.us
        chain: list[tuple[int, str]] = []
        p = m.parent
        skipped_self = False
        node_key: Optional[tuple[int, int]] = None
        while p is not None:
            if p.name.startswith(_BACKWARD):
                if node_key is None and p.key is not None:
                    node_key = p.key
            elif not skipped_self and p.name == call.op:
                skipped_self = True  # the outer dispatch of this same call
            elif id(p) not in outer:
                # a recorded call's own autograd wrapper (the detach of a saved output) is not a composite
                chain.append((id(p), p.name))
            if p.key is not None and call.site is not None and not p.name.startswith(_BACKWARD):
                forward_site.setdefault(p.key, call.site)
            p = p.parent
        call.ancestors = tuple(reversed(chain))
        if node_key is not None:
            backward.append((call, node_key))
    # A backward operator points at the user line of the forward operator whose autograd node it runs.
    for call, key in backward:
        site = forward_site.get(key)
        if site is not None:
            call.site = site
    return len(joined)


_COST: list[float] = []  # _per_call_cost(), measured once per process

# The lines the profiler's C++ side (kineto) writes straight to file descriptor 2 when a trace starts
# and stops ("USDT:... SyncActivityProfilerHandler.cpp:52] profiler_start"): captured, not printed
# among the report; check-ops' cli counts them with torch's warnings and prints them with -v.
PROFILER_LINES: list[str] = []


@contextlib.contextmanager
def _native_stderr_captured() -> Iterator[None]:
    """Sends what is written to file descriptor 2 meanwhile to PROFILER_LINES. Only the profiler's own
    start and stop run inside, never the traced code, so the script's stderr is not touched."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no fd 2 (an embedded interpreter): nothing to capture
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text = sink.read().decode("utf-8", "replace")
            PROFILER_LINES.extend(line for line in text.splitlines() if line.strip())


@contextlib.contextmanager
def _profiled() -> Iterator[Any]:
    """torch.profiler.profile over the CPU with overload names, its start and stop quiet (see above)."""
    cfg = torch._C._profiler._ExperimentalConfig(capture_overload_names=True)
    prof = profile(activities=[ProfilerActivity.CPU], experimental_config=cfg)
    with _native_stderr_captured():
        prof.__enter__()
    try:
        yield prof
    finally:
        with _native_stderr_captured():
            prof.__exit__(None, None, None)


def _per_call_cost(n: int = 200) -> float:
    """Seconds the recorder and the profiler add to one small operator call, measured on this machine: the
    same `n` calls timed bare and traced (best of 3). Subtracted per recorded call from the traced step
    time."""
    a = torch.ones(4)
    add = torch.ops.aten.add.Tensor

    def run() -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            add(a, a)
        return time.perf_counter() - t0

    bare, traced = [], []
    for _ in range(3):
        bare.append(run())
        with _profiled(), _Recorder():
            traced.append(run())
    return max(0.0, (min(traced) - min(bare)) / n)


def trace(fn: Callable[[], Any], *, calibrate: bool = True) -> Trace:
    """Run `fn()` once under the recorder and the profiler; return every call it made.

    The "steps" phase runs from the first module forward (or the start, if no module runs) to the end of the
    last optimizer step (or the end, if no optimizer steps); its wall time is what the host share divides by.
    """
    from torch.nn.modules.module import register_module_forward_pre_hook
    from torch.optim.optimizer import register_optimizer_step_post_hook

    rec = _Recorder()
    probe0 = _probe_s[0]
    marks: dict[str, Any] = {"start": None, "end": None, "steps": 0, "optimizers": []}

    def on_forward(module: Any, args: Any) -> None:
        if marks["start"] is None:
            marks["start"] = (len(rec.calls), time.perf_counter())
            marks["probe_at_start"] = _probe_s[0]
            fwd_handle.remove()

    def on_step(opt: Any, args: Any, kwargs: Any) -> None:
        marks["end"] = (len(rec.calls), time.perf_counter())
        marks["probe_at_end"] = _probe_s[0]
        marks["steps"] += 1
        cls = type(opt)
        mod = "torch.optim" if cls.__module__.startswith("torch.optim.") else cls.__module__
        name = f"{mod}.{cls.__name__}"
        if name not in marks["optimizers"]:
            marks["optimizers"].append(name)

    fwd_handle = register_module_forward_pre_hook(on_forward)
    step_handle = register_optimizer_step_post_hook(on_step)
    try:
        with _profiled() as prof:
            t0 = time.perf_counter()
            try:
                with rec:
                    fn()
            finally:
                t1 = time.perf_counter()
    finally:
        fwd_handle.remove()
        step_handle.remove()
    try:
        joined = _join(rec.calls, prof.profiler.kineto_results.events())
    except (AttributeError, RuntimeError):  # no profile left (the traced code stopped our session)
        joined = 0
    n = len(rec.calls)
    if marks["start"] is not None:
        (first, start_t), probe_start = marks["start"], marks["probe_at_start"]
    else:
        first, start_t, probe_start = 0, t0, probe0
    if marks["end"] is not None and marks["end"][0] >= first:
        (end, end_t), probe_end = marks["end"], marks["probe_at_end"]
    else:
        end, end_t, probe_end = n, t1, _probe_s[0]
    probe_s = probe_end - probe_start
    steps_wall = max(0.0, end_t - start_t)
    if calibrate and end > first and not _COST:
        _COST.append(_per_call_cost())
    cost = _COST[0] if calibrate and _COST else 0.0
    in_steps = rec.calls[first:end]
    floor = sum(c.kernel_us for c in in_steps) / 1e6  # recorded calls never nest: their own time, at least
    est = max(floor, steps_wall - probe_s - cost * len(in_steps))
    return Trace(
        rec.calls,
        t1 - t0,
        joined,
        phases={"setup": first, "steps": end - first, "after": n - end},
        window=(first, end),
        steps_wall_s=steps_wall,
        steps_wall_est_s=est,
        optimizer_steps=marks["steps"],
        optimizers=list(marks["optimizers"]),
        generic=dict(_GENERIC),
    )
