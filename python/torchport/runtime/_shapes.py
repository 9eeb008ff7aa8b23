"""Dynamic-shape analysis on CPU: `torchport run --shapes[=FILE]`.

Graph-mode accelerators (Ascend's graph mode, torch.compile) compile one graph per distinct input shape, so a
call whose tensor shapes change from step to step recompiles. This module records, per call site in the
user's code, the input and output tensor shapes of every torch API call across the run, and writes the report
Ascend's `-m dynamic_shape` analysis writes (msft_dynamic_shape_analysis_report.csv, with its six columns),
without a device and without editing the script.

How (docs/runtime.md, "Dynamic-shape analysis"):
- A TorchFunctionMode sees each torch API call at the level the user wrote it (torch.matmul, F.linear,
  Tensor.view), once: calls made inside that API's own Python code are not seen again. Backward runs in C++
  and is not seen; its shapes follow the forward's.
- The call site is the first frame outside torch, torchport and the standard library
  (torchport._frames.user_site, the same walk check-ops uses), so `self.fc(x)` is the site of the F.linear
  that nn.Linear runs.
- Steps are optimizer steps (a global Optimizer step post-hook); a script that never steps an optimizer
  is counted in forward calls of a top-level module (a global forward pre-hook, nested modules not counted).
- A site varies at a step when that step brings a shape signature (all input and output shapes of one call)
  the site had not seen in an earlier step: that is when a graph compiler compiles again. The shapes of the
  site's first step are its baseline (a line that runs on every parameter, such as an optimizer step, has
  many shapes in each step, but the same ones).
"""

from __future__ import annotations

import csv
import io
import os
import sys
from pathlib import Path
from types import FrameType
from typing import Any, Optional

import torch
from torch.overrides import TorchFunctionMode, resolve_name

from torchport._frames import USER, kind, user_site

DEFAULT_NAME = "msft_dynamic_shape_analysis_report.csv"
COLUMNS = (
    "Function Name",
    "File Path",
    "Line Number",
    "Call Stack",
    "Input Shape Range",
    "Output Shape Range",
)
EXTRA = ("Varying", "First Varied Step", "Last Varied Step", "Distinct Shapes", "Calls", "Step Unit")
STACK_DEPTH = 8  # user frames kept in the Call Stack column

Shape = tuple[int, ...]
Sig = tuple[tuple[Shape, ...], tuple[Shape, ...]]


def _shapes(x: Any, out: list[Shape]) -> None:
    """Shapes of the tensors in x: a tensor, or a list/tuple/dict of them (one level deep)."""
    Tensor = torch.Tensor
    if isinstance(x, Tensor):
        out.append(tuple(x.shape))
    elif isinstance(x, (list, tuple)):
        for y in x:
            if isinstance(y, Tensor):
                out.append(tuple(y.shape))
    elif isinstance(x, dict):
        for y in x.values():
            if isinstance(y, Tensor):
                out.append(tuple(y.shape))


class Site:
    __slots__ = ("name", "file", "line", "stack", "sigs", "calls", "new_at")

    def __init__(self, name: str, file: str, line: int, stack: str) -> None:
        self.name = name
        self.file = file
        self.line = line
        self.stack = stack
        self.sigs: dict[Sig, None] = {}  # distinct signatures, in order of first appearance
        self.calls = 0
        self.new_at: list[tuple[int, int]] = []  # (optimizer step, forward count) of each new signature


def _stack(frame: Optional[FrameType]) -> str:
    """The user frames from the call site outwards: `file:line in function`, innermost first."""
    parts: list[str] = []
    while frame is not None and len(parts) < STACK_DEPTH:
        code = frame.f_code
        if kind(code) == USER:
            parts.append(f"{code.co_filename}:{frame.f_lineno} in {code.co_name}")
        frame = frame.f_back
    return " <- ".join(parts)


class ShapeRecorder(TorchFunctionMode):
    """Records shapes per (torch API, user file, user line). Use as a context manager around the run."""

    def __init__(self) -> None:
        super().__init__()
        self.sites: dict[tuple[str, str, int], Site] = {}
        self.opt_steps = 0
        self.forwards = 0  # forward calls of top-level modules
        self._depth = 0  # module forward nesting
        self._names: dict[Any, Optional[str]] = {}  # func -> API name, None: not recorded
        self._handles: list[Any] = []

    # -- hooks -----------------------------------------------------------------------------------------
    def _on_step(self, opt: Any, args: Any, kwargs: Any) -> None:
        self.opt_steps += 1

    def _pre_forward(self, module: Any, args: Any) -> None:
        if self._depth == 0:
            self.forwards += 1
        self._depth += 1

    def _post_forward(self, module: Any, args: Any, out: Any) -> None:
        self._depth = max(0, self._depth - 1)

    def __enter__(self) -> ShapeRecorder:
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._handles = [
            register_optimizer_step_post_hook(self._on_step),
            register_module_forward_pre_hook(self._pre_forward),
            register_module_forward_hook(self._post_forward, always_call=True),
        ]
        super().__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        for h in self._handles:
            h.remove()
        self._handles = []

    # -- recording -------------------------------------------------------------------------------------
    def _name(self, func: Any) -> Optional[str]:
        try:
            return self._names[func]
        except KeyError:
            pass
        name: Optional[str]
        try:
            name = resolve_name(func)
        except Exception:  # an object torch cannot name
            name = None
        if name is None:
            qual = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
            if qual.startswith("_VariableFunctionsClass."):  # torch.randint, torch.zeros: C functions
                name = "torch." + qual.split(".", 1)[1]
            else:
                module = getattr(func, "__module__", None)
                name = f"{module}.{qual}" if module else qual
        # attribute getters and setters (x.shape, x.grad = g) are not calls that build graph nodes
        if name is not None and name.endswith(("__get__", "__set__", "__delete__")):
            name = None
        self._names[func] = name
        return name

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = self._name(func)
        if name is None:
            return out
        outs: list[Shape] = []
        _shapes(out, outs)
        if not outs:  # size(), dim(), item(), __bool__: no tensor made
            return out
        frame = sys._getframe(1)
        site = user_site(frame)
        if site is None:  # only torch / torchport / stdlib frames: not the user's call
            return out
        ins: list[Shape] = []
        for a in args:
            _shapes(a, ins)
        for a in kwargs.values():
            _shapes(a, ins)
        key = (name, site[0], site[1])
        s = self.sites.get(key)
        if s is None:
            s = self.sites[key] = Site(name, site[0], site[1], _stack(frame))
        s.calls += 1
        sig = (tuple(ins), tuple(outs))
        if sig not in s.sigs:
            s.sigs[sig] = None
            # a call outside any forward (data preparation) belongs to the forward that comes next
            s.new_at.append((self.opt_steps, self.forwards - 1 if self._depth else self.forwards))
        return out

    # -- report ----------------------------------------------------------------------------------------
    def step_unit(self) -> str:
        return "optimizer step" if self.opt_steps else "forward"

    def rows(self) -> list[list[str]]:
        by_opt = self.opt_steps > 0
        rows: list[list[str]] = []
        for s in sorted(self.sites.values(), key=lambda s: (s.file, s.line, s.name)):
            # steps are counted from 0: optimizer steps completed before the call, or top-level forwards
            # completed before it
            steps = [o if by_opt else f for o, f in s.new_at]
            # the shapes of the site's first step are its baseline (a graph is compiled for each of them
            # anyway); a later step that brings a shape not seen before is a variation
            varied = [st for st in steps if st > steps[0]]
            rows.append(
                [
                    s.name,
                    s.file,
                    str(s.line),
                    s.stack,
                    shape_range([sig[0] for sig in s.sigs]),
                    shape_range([sig[1] for sig in s.sigs]),
                    "yes" if varied else "no",
                    str(varied[0]) if varied else "",
                    str(varied[-1]) if varied else "",
                    str(len(s.sigs)),
                    str(s.calls),
                    self.step_unit(),
                ]
            )
        return rows

    def to_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([*COLUMNS, *EXTRA])
        w.writerows(self.rows())
        return buf.getvalue()

    def write(self, path: str) -> Path:
        from torchport._files import write_atomic

        p = Path(path)
        if p.is_dir():
            p = p / DEFAULT_NAME
        write_atomic(p, self.to_csv())
        return p

    def summary(self) -> str:
        varying = sum(1 for r in self.rows() if r[6] == "yes")
        n = self.opt_steps if self.opt_steps else self.forwards
        return f"{len(self.sites)} call sites over {n} {self.step_unit()}(s); {varying} with varying shapes"


def shape_range(groups: list[tuple[Shape, ...]]) -> str:
    """The range of a list of shape tuples (one per distinct call signature): tensors of the same position and
    rank are merged dimension by dimension, a varying dimension written `min~max`: `[(8, 5~40, 32), (32,)]`.
    Calls with a different number of tensors or ranks are separate alternatives, joined by ` | `."""
    by_layout: dict[tuple[int, ...], list[list[int]]] = {}  # ranks -> per flattened dim [min, max]
    for g in groups:
        layout = tuple(len(t) for t in g)
        flat = [d for t in g for d in t]
        r = by_layout.get(layout)
        if r is None:
            by_layout[layout] = [[d, d] for d in flat]
        else:
            for mm, d in zip(r, flat):
                if d < mm[0]:
                    mm[0] = d
                if d > mm[1]:
                    mm[1] = d
    out: list[str] = []
    for layout, mms in by_layout.items():
        tensors: list[str] = []
        i = 0
        for rank in layout:
            dims = [str(lo) if lo == hi else f"{lo}~{hi}" for lo, hi in mms[i : i + rank]]
            i += rank
            tensors.append("(" + ", ".join(dims) + ("," if rank == 1 else "") + ")")
        out.append("[" + ", ".join(tensors) + "]")
    return " | ".join(out)


def default_path() -> str:
    return os.path.join(os.getcwd(), DEFAULT_NAME)
