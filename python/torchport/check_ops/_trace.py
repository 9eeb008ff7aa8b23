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


@dataclass
class Call:
    """One operator call that reached the dispatch mode."""

    seq: int
    op: str  # "aten::add.Tensor" ("aten::t" for the default overload)
    dtypes: tuple[str, ...]
    site: Optional[tuple[str, int]]  # first user frame (file, line)
    kernel_us: float = 0.0  # CPU time of the call itself (profiler), without the tracer's own work
    ancestors: tuple[tuple[int, str], ...] = ()  # (event id, op) of enclosing operators, outermost first
    inner: list[Node] = field(default_factory=list)  # operators the CPU kernel called


@dataclass
class Trace:
    calls: list[Call]
    wall_s: float  # wall time of the traced code
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


def _dtypes(args: Any, kwargs: Any) -> tuple[str, ...]:
    seen: list[str] = []

    def add(x: Any) -> None:
        if isinstance(x, torch.Tensor):
            d = str(x.dtype).replace("torch.", "")
            if d not in seen:
                seen.append(d)
        elif isinstance(x, (list, tuple)):
            for y in x:
                if isinstance(y, torch.Tensor):
                    add(y)

    for a in args:
        add(a)
    if kwargs:
        for a in kwargs.values():
            add(a)
    return tuple(seen)


class _Recorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Call] = []
        self._rf = torch._C._profiler._RecordFunctionFast

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func.namespace == "profiler":  # record_function markers of torch.optim and friends
            return func(*args, **(kwargs or {}))
        seq = len(self.calls)
        call = Call(seq, func.name(), _dtypes(args, kwargs), user_site(sys._getframe(1)))
        self.calls.append(call)
        with self._rf(MARK + str(seq)):
            out = func(*args, **(kwargs or {}))
        extra = _dtypes(out if isinstance(out, (tuple, list)) else (out,), None)
        if extra and extra != call.dtypes:
            call.dtypes = call.dtypes + tuple(d for d in extra if d not in call.dtypes)
        return out


def _event_op(e: Any) -> str:
    name = e.name
    overload = getattr(e, "overload_name", "") or ""
    return f"{name}.{overload}" if overload else name


def _is_op_event(name: str) -> bool:
    return name.count("::") == 1 and not name.startswith(("autograd::", "profiler::"))


def _subtree(e: Any) -> list[Node]:
    out: list[Node] = []
    for c in e.cpu_children:
        if _is_op_event(c.name):
            out.append(Node(_event_op(c), float(c.cpu_time_total), _subtree(c)))
        else:
            out.extend(_subtree(c))
    return out


def _join(calls: list[Call], events: Any) -> None:
    for e in events:
        name = e.name
        if not name.startswith(MARK):
            continue
        try:
            call = calls[int(name[len(MARK) :])]
        except (ValueError, IndexError):
            continue
        inner = [c for c in e.cpu_children if _is_op_event(c.name)]
        if inner:
            call.kernel_us = float(inner[0].cpu_time_total)
            call.inner = _subtree(inner[0])
        else:
            call.kernel_us = float(e.cpu_time_total)
        chain: list[tuple[int, str]] = []
        p = e.cpu_parent
        skipped_self = False
        while p is not None:
            if _is_op_event(p.name):
                if not skipped_self:
                    skipped_self = True  # the outer dispatch of this same call
                else:
                    chain.append((int(p.id), _event_op(p)))
            p = p.cpu_parent
        call.ancestors = tuple(reversed(chain))


def trace(fn: Callable[[], Any]) -> Trace:
    """Run `fn()` once under the recorder and the profiler; return every call it made."""
    rec = _Recorder()
    cfg = torch._C._profiler._ExperimentalConfig(capture_overload_names=True)
    with profile(activities=[ProfilerActivity.CPU], experimental_config=cfg) as prof:
        t0 = time.perf_counter()
        with rec:
            fn()
        wall = time.perf_counter() - t0
    _join(rec.calls, prof.events())
    return Trace(rec.calls, wall)
