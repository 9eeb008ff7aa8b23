"""Profiler: ProfilerActivity.CUDA -> the target's activity (dropped where none), use_cuda, sort keys."""

from __future__ import annotations

import functools
import inspect
from typing import Any

import torch

from torchport.runtime._log import MATCH, MODIFIED
from torchport.runtime._session import Session
from torchport.targets import Target


def map_activities(acts: Any, target: Target) -> Any:
    """The profiler activities for `target`: ProfilerActivity.CUDA becomes the target's activity (npu, mlu,
    musa: PrivateUse1; xpu: XPU; hpu: HPU), or is dropped where there is none (cpu, mps); CPU is kept."""
    if acts is None:
        return None
    PA = torch.profiler.ProfilerActivity
    repl = getattr(PA, target.profiler_activity) if target.profiler_activity else None
    out: list[Any] = []
    for a in acts:
        if a == PA.CUDA:
            if repl is not None and repl not in out:
                out.append(repl)
        elif a not in out:
            out.append(a)
    return out or [PA.CPU]


_map_activities = map_activities


def takes_use_cuda(init: Any) -> bool:
    """Whether this torch's profiler __init__ still has `use_cuda` (deprecated, then removed: torch 2.14's
    torch.profiler.profile and torch.autograd.profiler.profile have only use_device / activities)."""
    try:
        return "use_cuda" in inspect.signature(init).parameters
    except (TypeError, ValueError):
        return True


def install(s: Session) -> None:
    p = s.patcher
    hit = s.log.hit
    target = s.target
    PA = torch.profiler.ProfilerActivity
    repl = getattr(PA, target.profiler_activity) if target.profiler_activity else None

    def map_activities(acts: Any) -> Any:
        return _map_activities(acts, target)

    import torch.profiler.profiler as prof

    orig_init = prof.profile.__init__
    has_use_cuda = takes_use_cuda(orig_init)

    @functools.wraps(orig_init)
    def profile_init(self: Any, *a: Any, **kw: Any) -> None:
        acts = kw.get("activities")
        if acts is not None and PA.CUDA in list(acts):
            new = map_activities(acts)
            cls, why = (
                (MATCH, "") if repl is not None else (MODIFIED, f"{target.name} has no device activity")
            )
            hit("torch.profiler.profile", ("activities", list(acts)), ("activities", new), cls, why)
            kw["activities"] = new
        if kw.get("use_cuda"):
            hit(
                "torch.profiler.profile",
                ("use_cuda", True),
                ("use_cuda", False) if has_use_cuda else "activities",
                MODIFIED,
                "device activity mapped"
                + ("" if has_use_cuda else f" (torch {torch.__version__} has no use_cuda)"),
            )
            kw["use_cuda"] = False
            if "activities" not in kw:
                kw["activities"] = map_activities([PA.CPU, PA.CUDA])
        if not has_use_cuda:
            kw.pop("use_cuda", None)  # False (or mapped above): the same profile without the removed argument
        orig_init(self, *a, **kw)

    p.set(prof.profile, "__init__", profile_init)

    import torch.autograd.profiler as aprof

    orig_ainit = aprof.profile.__init__
    a_has_use_cuda = takes_use_cuda(orig_ainit)

    @functools.wraps(orig_ainit)
    def aprofile_init(self: Any, *a: Any, **kw: Any) -> None:
        if kw.get("use_cuda"):
            kw["use_cuda"] = False
            if target.device_type != "cpu" and repl is not None:
                kw["use_device"] = target.device_type
            hit(
                "autograd.profiler.profile",
                ("use_cuda", True),
                ("use_device", kw.get("use_device")),
                MODIFIED,
                "" if a_has_use_cuda else f"torch {torch.__version__} has no use_cuda",
            )
        if not a_has_use_cuda:
            kw.pop("use_cuda", None)
        if kw.get("use_device") == "cuda":
            nd = None if target.device_type == "cpu" else target.device_type
            hit("autograd.profiler.profile", ("use_device", "cuda"), ("use_device", nd), MATCH)
            kw["use_device"] = nd
        orig_ainit(self, *a, **kw)

    p.set(aprof.profile, "__init__", aprofile_init)

    from torch.autograd.profiler_util import EventList

    orig_table = EventList.table

    @functools.wraps(orig_table)
    def table(self: Any, sort_by: Any = None, *a: Any, **kw: Any) -> Any:
        if isinstance(sort_by, str) and "cuda" in sort_by:
            new = sort_by.replace("cuda", "cpu" if target.device_type == "cpu" else "device")
            hit(
                "EventList.table",
                ("sort_by", sort_by),
                ("sort_by", new),
                MODIFIED,
                "CUDA time columns are absent",
            )
            sort_by = new
        return orig_table(self, sort_by, *a, **kw)

    p.set(EventList, "table", table)
