"""Record the aten operators a piece of code executes, at both levels.

- Leaf level: a TorchDispatchMode sees every operator that reaches a kernel (below autograd), with its
  exact overload, its input dtypes and the Python stack, from which the first user frame is taken.
- Composite level: the profiler's RecordFunction events nest every dispatcher call, including the
  CompositeImplicitAutograd operators (`aten::matmul`, `aten::lstm`, `aten::linear`) that are decomposed
  before they reach the mode. Each mode call is wrapped in a marker event (`tp#N`), which joins the two:
  the marker's aten ancestors are the composite operators that call was part of.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any, Callable, Optional

import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode

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
    phases: dict[str, int] = field(default_factory=dict)


_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_TP_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
_SITE = tuple(
    os.path.abspath(p) + os.sep
    for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    if p
)
_USER, _LIBRARY, _INTERNAL = 0, 1, 2
_code_kind: dict[CodeType, int] = {}


def _kind(code: CodeType) -> int:
    k = _code_kind.get(code)
    if k is None:
        fn = code.co_filename
        path = os.path.abspath(fn) if not fn.startswith("<") else fn
        if fn.startswith("<") or path.startswith((_TORCH_DIR, _TP_DIR)):
            k = _INTERNAL
        elif path.startswith(_SITE):
            k = _LIBRARY
        elif path.startswith(_STDLIB):
            k = _INTERNAL
        else:
            k = _USER
        _code_kind[code] = k
    return k


def user_site(frame: Optional[FrameType]) -> Optional[tuple[str, int]]:
    """(file, line) of the first user frame: not torch, not torchport, not the standard library. A
    third-party library frame is used only when no user frame exists."""
    lib: Optional[tuple[str, int]] = None
    while frame is not None:
        k = _kind(frame.f_code)
        if k == _USER:
            return (frame.f_code.co_filename, frame.f_lineno)
        if k == _LIBRARY and lib is None:
            lib = (frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return lib


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


class _Recorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Call] = []
        self._rf = torch._C._profiler._RecordFunctionFast
        self._names: dict[Any, Optional[str]] = {}  # OpOverload -> "aten::add.Tensor", None: not recorded

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        try:
            name = self._names[func]
        except KeyError:
            # profiler:: ops are the record_function markers of torch.optim and friends
            name = self._names[func] = None if func.namespace == "profiler" else func.name()
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


def trace(fn: Callable[[], Any]) -> Trace:
    """Run `fn()` once under the recorder and the profiler; return every call it made."""
    rec = _Recorder()
    cfg = torch._C._profiler._ExperimentalConfig(capture_overload_names=True)
    with profile(activities=[ProfilerActivity.CPU], experimental_config=cfg) as prof:
        t0 = time.perf_counter()
        with rec:
            fn()
        wall = time.perf_counter() - t0
    try:
        joined = _join(rec.calls, prof.profiler.kineto_results.events())
    except (AttributeError, RuntimeError):  # no profile left (the traced code stopped our session)
        joined = 0
    return Trace(rec.calls, wall, joined)
