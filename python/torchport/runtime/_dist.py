"""Collectives: init_process_group / new_group backends (nccl -> the target's), is_nccl_available."""

from __future__ import annotations

import functools
from typing import Any, Optional

from torchport.runtime._log import MATCH, MODIFIED
from torchport.runtime._session import Session
from torchport.targets import Target


def translate_backend(backend: Optional[str], target: Target) -> Optional[str]:
    """The backend string for `target`: "nccl" -> target.backend; "cuda:nccl,cpu:gloo" -> per-device
    pairs with cuda and nccl mapped (a pair that then duplicates a device is dropped). Anything else is
    returned as is."""
    if not isinstance(backend, str):
        return backend
    text = backend.strip()
    if ":" not in text:
        return target.backend if text.lower() == "nccl" else backend
    pairs: list[tuple[str, str]] = []
    for part in text.split(","):
        dev, _, be = part.strip().partition(":")
        dev = target.device_type if dev.strip().lower() == "cuda" else dev.strip()
        be = target.backend if be.strip().lower() == "nccl" else be.strip()
        if dev not in (d for d, _ in pairs):
            pairs.append((dev, be))
    out = ",".join(f"{d}:{b}" for d, b in pairs)
    return backend if out == text else out


def install(s: Session) -> None:
    try:
        import torch.distributed as dist
        import torch.distributed.distributed_c10d as c10d
    except Exception:
        return
    if not dist.is_available():
        return
    p = s.patcher
    hit = s.log.hit
    target = s.target
    mapper = s.mapper

    orig_init = c10d.init_process_group

    @functools.wraps(orig_init)
    def init_process_group(backend: Optional[str] = None, *a: Any, **kw: Any) -> Any:
        if "backend" in kw:
            backend = kw.pop("backend")
        new = translate_backend(backend, target)
        if new != backend:
            hit("init_process_group", ("backend", backend), ("backend", new), MATCH)
        d = kw.get("device_id")
        if d is not None:
            nd = mapper.map(d)
            if nd is not d:
                nd = nd if target.has_device_index else None
                hit(
                    "init_process_group",
                    ("device_id", d),
                    ("device_id", nd),
                    MODIFIED if nd is None else MATCH,
                )
                kw["device_id"] = nd
        out = orig_init(new, *a, **kw)
        s.log.rank_known()  # an mp.spawn child learns its rank here: it can choose its log file now
        return out

    orig_new_group = c10d.new_group

    @functools.wraps(orig_new_group)
    def new_group(*a: Any, **kw: Any) -> Any:
        if "backend" in kw:
            b = kw["backend"]
            nb = translate_backend(b, target)
            if nb != b:
                hit("new_group", ("backend", b), ("backend", nb), MATCH)
                kw["backend"] = nb
        elif len(a) >= 3:
            b = a[2]
            nb = translate_backend(b, target)
            if nb != b:
                hit("new_group", ("backend", b), ("backend", nb), MATCH)
                a = (*a[:2], nb, *a[3:])
        return orig_new_group(*a, **kw)

    def is_nccl_available() -> bool:
        answer = bool(dist.is_backend_available(target.backend))
        hit(
            "is_nccl_available",
            "is_nccl_available()",
            f"is_backend_available({target.backend!r}) = {answer}",
            MODIFIED,
            f"answers for {target.backend}",
        )
        return answer

    for mod in (c10d, dist):
        if getattr(mod, "init_process_group", None) is orig_init:
            p.set(mod, "init_process_group", init_process_group)
        if getattr(mod, "new_group", None) is orig_new_group:
            p.set(mod, "new_group", new_group)
        if hasattr(mod, "is_nccl_available"):
            p.set(mod, "is_nccl_available", is_nccl_available)
