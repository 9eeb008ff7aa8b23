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
        if isinstance(kw.get("pg_options"), NcclOptions):
            kw["pg_options"] = translate_options(s, kw["pg_options"], backend_cls_of(s))
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
        if isinstance(kw.get("pg_options"), NcclOptions):
            kw["pg_options"] = translate_options(s, kw["pg_options"], backend_cls_of(s))
        elif len(a) >= 4 and isinstance(a[3], NcclOptions):
            a = (*a[:3], translate_options(s, a[3], backend_cls_of(s)), *a[4:])
        return orig_new_group(*a, **kw)

    orig_nccl_available = getattr(dist, "is_nccl_available", None)
    callers = getattr(s, "callers", None)

    def is_nccl_available() -> bool:
        if orig_nccl_available is not None and callers is not None and callers.truth_forced(1):
            return bool(orig_nccl_available())  # torch's own c10d code: the truth (callers.json)
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

    _install_internals(s, dist, c10d)


def _install_internals(s: Session, dist: Any, c10d: Any) -> None:
    """init_process_group() without a backend, the ProcessGroupNCCL alias, ProcessGroup._get_backend."""
    p = s.patcher
    target = s.target
    mapper = s.mapper
    hit = s.log.hit

    # default_device_backend_map["cuda"] is the target's backend while enabled, as "nccl" in a backend string
    # is. Code that takes its CUDA path reads it for its backend (torchtitan: `map.get(device_type)`), and
    # init_process_group() with no backend in torch before 2.6 built its map from every entry. The entry is
    # not removed (transfer_to_npu removes it, PEERS §2 item 4): torch's `fake` backend, registered when
    # torch.distributed.fsdp._flat_param imports torch.testing._internal.distributed.fake_pg, claims every
    # device of its list that has no entry, and "cuda" then gave code that asks the map the fake process
    # group (torchtitan: "Cannot init process group where rank (-1) >= world_size (-1)"). Each read of the
    # entry is logged at its call site.
    backend_cls = dist.Backend
    orig_map = backend_cls.__dict__.get("default_device_backend_map")
    if isinstance(orig_map, dict) and orig_map.get("cuda") != target.backend:
        saved = orig_map.get("cuda")
        why = f"the backend of the script's CUDA device is {target.name}'s"

        class _BackendMap(dict):  # type: ignore[type-arg]
            def _read(self) -> None:
                hit(
                    "Backend.default_device_backend_map",
                    f"Backend.default_device_backend_map['cuda'] ({saved!r})",
                    repr(target.backend),
                    MATCH,
                    why,
                    depth=3,
                )

            def __getitem__(self, key: Any) -> Any:
                if key == "cuda":
                    self._read()
                return dict.__getitem__(self, key)

            def get(self, key: Any, default: Any = None) -> Any:
                if key == "cuda":
                    self._read()
                return dict.get(self, key, default)

        mapped = _BackendMap(orig_map)
        mapped["cuda"] = target.backend
        p.set(backend_cls, "default_device_backend_map", mapped)

        def carry_over() -> None:  # backends registered while enabled stay registered
            for k, v in mapped.items():
                if k != "cuda":
                    orig_map[k] = v

        p.undo.append(carry_over)

    # ProcessGroupNCCL: isinstance checks see the target's backend class; constructing one is refused
    backend_cls = getattr(c10d, f"ProcessGroup{target.backend.upper()}", None) or getattr(
        dist, f"ProcessGroup{target.backend.capitalize()}", None
    )

    class _Meta(type):
        def __instancecheck__(cls, obj: Any) -> bool:
            return backend_cls is not None and isinstance(obj, backend_cls)

        def __subclasscheck__(cls, sub: type) -> bool:
            return backend_cls is not None and isinstance(sub, type) and issubclass(sub, backend_cls)

        def __call__(cls, *a: Any, **k: Any) -> Any:
            hit("ProcessGroupNCCL", "ProcessGroupNCCL(...)", "error", "mismatch", "no NCCL")
            raise NotImplementedError(
                f"torch.distributed.ProcessGroupNCCL has no equivalent on target {target.name}: create the "
                f"process group with init_process_group(backend={target.backend!r}) [torchport]"
            )

    options_cls = _options_class(s, backend_cls)
    alias = _Meta(
        "ProcessGroupNCCL",
        (),
        {"__module__": "torch.distributed", "Options": options_cls, "NCCLConfig": _NcclConfig},
    )
    for mod in (dist, c10d):
        p.set(mod, "ProcessGroupNCCL", alias)

    pg = getattr(dist, "ProcessGroup", None)
    orig_get_backend = getattr(pg, "_get_backend", None) if pg is not None else None
    if orig_get_backend is not None:

        def _get_backend(self: Any, device: Any) -> Any:
            nd = mapper.map(device)
            if nd is not device:
                hit("ProcessGroup._get_backend", ("device", device), ("device", nd), None)
            return orig_get_backend(self, nd)

        try:
            p.set(pg, "_get_backend", _get_backend)
        except (TypeError, AttributeError):  # a pybind class that refuses new attributes: leave it
            pass


def backend_cls_of(s: Session) -> Any:
    """The target's process-group class (ProcessGroupGloo on cpu), or None."""
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    b = s.target.backend
    return getattr(c10d, f"ProcessGroup{b.upper()}", None) or getattr(
        dist, f"ProcessGroup{b.capitalize()}", None
    )


class _NcclConfig:
    """torch.distributed.ProcessGroupNCCL.NCCLConfig under the redirect: holds what the script sets (blocking,
    cga_cluster_size, min_ctas, max_ctas, net_name, ...); no NCCL reads it."""

    def __repr__(self) -> str:
        return f"NCCLConfig({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class NcclOptions:
    """torch.distributed.ProcessGroupNCCL.Options under the redirect: keeps what the script sets
    (is_high_priority_stream, config, _timeout, ...), so that init_process_group / new_group can pass on what
    the target's backend takes and log what it does not."""

    def __init__(self, is_high_priority_stream: bool = False) -> None:
        object.__setattr__(self, "_set", {})
        object.__setattr__(self, "config", _NcclConfig())
        self.is_high_priority_stream = is_high_priority_stream

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name != "config":
            self._set[name] = value

    def user_settings(self) -> dict[str, Any]:
        """What the script asked for: the attributes it set (is_high_priority_stream only when True) and the
        NCCLConfig fields."""
        out = {k: v for k, v in self._set.items() if not (k == "is_high_priority_stream" and v is False)}
        out.update({f"config.{k}": v for k, v in vars(self.config).items()})
        return out

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.user_settings().items())
        return f"ProcessGroupNCCL.Options({inner})"


def _options_class(s: Session, backend_cls: Any) -> type:
    hit = s.log.hit
    backend = s.target.backend

    class Options(NcclOptions):
        def __init__(self, is_high_priority_stream: bool = False) -> None:
            super().__init__(is_high_priority_stream)
            hit(
                "ProcessGroupNCCL.Options",
                "ProcessGroupNCCL.Options(is_high_priority_stream=True)"
                if is_high_priority_stream
                else "ProcessGroupNCCL.Options()",
                "torchport ProcessGroupNCCL.Options (kept for init_process_group / new_group)",
                MODIFIED,
                f"no NCCL: what the {backend} backend takes is passed on there, the rest is logged",
            )

    Options.__qualname__ = "ProcessGroupNCCL.Options"
    Options.__module__ = "torch.distributed"
    return Options


def translate_options(s: Session, opts: NcclOptions, backend_cls: Any) -> Any:
    """pg_options for the target's backend: gloo takes none (torch's init_process_group ignores them), so
    None; a backend with its own Options class gets the attributes it has. Logged with what was dropped, at
    the user's init_process_group / new_group line (depth: translate <- wrapper <- user)."""
    wanted = opts.user_settings()
    target_opts_cls = getattr(backend_cls, "Options", None) if s.target.backend != "gloo" else None
    out: Any = None
    kept: dict[str, Any] = {}
    if target_opts_cls is not None:
        try:
            out = target_opts_cls()
        except Exception:
            out = None
        if out is not None:
            for k, v in wanted.items():
                if "." in k or not hasattr(out, k):
                    continue
                try:
                    setattr(out, k, v)
                    kept[k] = v
                except Exception:  # noqa: BLE001 - a read-only or differently typed field: dropped, logged
                    continue
    dropped = {k: v for k, v in wanted.items() if k not in kept}
    b = s.target.backend
    if out is None:
        after = "pg_options=None"
        why = (
            f"{b} takes no process-group options (torch's init_process_group ignores them for gloo)"
            if b == "gloo"
            else f"{b}'s backend class has no Options"
        )
    else:
        after = f"pg_options={type(out).__qualname__}({', '.join(f'{k}={v!r}' for k, v in kept.items())})"
        why = f"passed on to {b}"
    if dropped:
        why += ": not applied: " + ", ".join(f"{k}={v!r}" for k, v in dropped.items())
    s.log.hit(
        "pg_options",
        f"pg_options={opts!r}",
        after,
        MODIFIED if dropped else MATCH,
        why,
        3,
    )
    return out
