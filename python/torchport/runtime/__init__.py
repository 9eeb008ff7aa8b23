"""Run unchanged CUDA PyTorch code on another target by redirecting CUDA APIs at run time.

Public API (stable):

- ``enable(target, *, log=None, strict=False, cuda_available="truth", shims=("apex", "pynvml"),
  log_all_ranks=False)``: redirect CUDA to `target` ("npu", "mlu", "musa", "xpu", "mps", "hpu", "cpu" or
  "auto"). Raises TargetUnavailable (with what to install) when the target cannot run here.
- ``disable()``: put back every original attribute, environment variable and import hook.
- ``is_enabled()``, ``current_target()``.
- ``print_summary_at_exit(on=True)``: print the per-call summary to stderr at exit (what `torchport run` and
  `import torchport.auto` with TORCHPORT_LOG do).
- ``run_script(path, argv) -> int`` / ``run_module(name, argv) -> int``: run a script like
  `python path argv...` (sys.argv set, exit code returned, exceptions printed as python prints them).
- ``is_cuda_device(device)``: True for "cuda" devices and for the target's device: use it where user code
  checks ``device.type == "cuda"``.
- ``env_target()``, ``env_options()``: the target and the enable() options the TORCHPORT_* variables give
  (what `import torchport.auto`, the .pth hook and the notebook extension enable with).

Importing this package does not import torch; enable() does.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Any, Optional, Sequence, Union

from torchport._runner import run_module, run_script
from torchport.runtime._log import OWNER_ENV
from torchport.targets import Target, TargetUnavailable

__all__ = [
    "TargetUnavailable",
    "current_target",
    "disable",
    "enable",
    "env_options",
    "env_target",
    "is_cuda_device",
    "is_enabled",
    "print_summary_at_exit",
    "run_module",
    "run_script",
    "summary",
]

_active: Any = None
_atexit_registered = False
# enable() and disable() are serialised: two threads never patch or restore at once, and a disable() racing an
# enable() sees either nothing or a complete session.
_lock = threading.RLock()


def enable(
    target: Union[str, Target],
    *,
    log: Optional[str] = None,
    strict: bool = False,
    cuda_available: str = "truth",
    shims: Sequence[str] = ("apex", "pynvml"),
    log_all_ranks: bool = False,
    check: bool = True,
    track_sites: Optional[bool] = None,
) -> None:
    """Redirect CUDA to `target`. Calling it again with the same target does nothing (nothing is patched
    twice); with another target, call disable() first. `check=False` skips the device-presence check (tests of
    per-target decisions use it; the vendor package must still import). `track_sites`: record each redirected
    call site for the log and the summary (default: when `log` is given); it costs a frame lookup per call."""
    with _lock:
        _enable(
            target,
            log=log,
            strict=strict,
            cuda_available=cuda_available,
            shims=shims,
            log_all_ranks=log_all_ranks,
            check=check,
            track_sites=track_sites,
        )


def env_target() -> str:
    """$TORCHPORT_TARGET, else "auto"."""
    return os.environ.get("TORCHPORT_TARGET") or "auto"


def env_options() -> dict[str, Any]:
    """enable()'s keyword options from TORCHPORT_LOG, TORCHPORT_STRICT, TORCHPORT_CUDA_AVAILABLE (default
    "user", as for `torchport run`), TORCHPORT_LOG_ALL_RANKS and TORCHPORT_SHIMS (comma-separated, default
    "apex,pynvml"; empty: none)."""
    shims = os.environ.get("TORCHPORT_SHIMS")
    return {
        "log": os.environ.get("TORCHPORT_LOG") or None,
        "strict": env_flag("TORCHPORT_STRICT"),
        "cuda_available": os.environ.get("TORCHPORT_CUDA_AVAILABLE") or "user",
        "log_all_ranks": env_flag("TORCHPORT_LOG_ALL_RANKS"),
        "shims": ("apex", "pynvml") if shims is None else tuple(x for x in shims.split(",") if x),
    }


def env_flag(name: str) -> bool:
    """A TORCHPORT_* switch: set to anything but "" or "0"."""
    return os.environ.get(name, "") not in ("", "0")


def _enable(
    target: Union[str, Target],
    *,
    log: Optional[str],
    strict: bool,
    cuda_available: str,
    shims: Sequence[str],
    log_all_ranks: bool,
    check: bool,
    track_sites: Optional[bool],
) -> None:
    global _active
    from torchport.targets import get_target, missing_package_message, vendor_package_missing

    if isinstance(target, str) and target != "auto":
        t = get_target(target)
        if vendor_package_missing(t):  # before importing torch: the answer comes at once
            raise TargetUnavailable(missing_package_message(t))
    from torchport.runtime import _session as sess_mod

    if isinstance(target, str):
        t = sess_mod.resolve_target(target)
    else:
        t = target
    if _active is not None:
        if _active.target == t:
            return
        raise RuntimeError(
            f"torchport runtime is already enabled for target {_active.target.name}; call disable() first"
        )
    # environment first: vendor packages read their variables when they initialise
    env_session = _EnvOnly(t)
    if t is not sess_mod.CUDA_PASSTHROUGH:
        env_session.map_env()
    try:
        devmod = (
            sess_mod.check_available(t) if check and t.device_type != "cuda" else sess_mod.device_module(t)
        )
    except BaseException:
        env_session.restore()
        raise
    session = sess_mod.Session(
        t,
        log=log,
        strict=strict,
        cuda_available=cuda_available,
        log_all_ranks=log_all_ranks,
        devmod=devmod,
        track_sites=track_sites,
    )
    session.log.classify = session.mapper.classify
    env_session.replay(session)
    if log and not os.environ.get(OWNER_ENV):  # the processes this one starts append to its log
        session.env_before.setdefault(OWNER_ENV, None)
        os.environ[OWNER_ENV] = str(os.getpid())
    if t is sess_mod.CUDA_PASSTHROUGH:
        # `auto` on a CUDA machine: CUDA is the best target there is; patch nothing
        session.log.note(
            "target auto: CUDA is present (torch.accelerator reports cuda): nothing is redirected"
        )
        _activate(session)
        return
    from torchport.runtime import _amp, _args, _compilers, _cuda_ns, _dist, _extras, _profiler, _shims, _spawn

    try:
        _args.install(session)
        _cuda_ns.install(session)
        _extras.install(session)
        _amp.install(session)
        _dist.install(session)
        _profiler.install(session)
        _compilers.install(session)
        _shims.install(session, tuple(shims))
        _spawn.install(session, shims=tuple(shims), log_all_ranks=log_all_ranks)
    except BaseException:
        _shut(session)
        raise
    _activate(session)


def _activate(session: Any) -> None:
    global _active, _atexit_registered
    _active = session
    if not _atexit_registered:
        atexit.register(_at_exit)
        _atexit_registered = True


class _EnvOnly:
    """Maps environment variables before the session exists, then hands the log lines to it."""

    def __init__(self, target: Target) -> None:
        from torchport.runtime._log import CallLog
        from torchport.runtime._session import Session

        self.s = Session.__new__(Session)
        self.s.target = target
        self.s.log = CallLog(None)
        self.s.env_before = {}
        self.warnings: list[str] = []
        self.s.warn = self.warnings.append  # type: ignore[method-assign]

    def map_env(self) -> None:
        self.s.map_env()

    def restore(self) -> None:
        self.s.restore_env()

    def replay(self, session: Any) -> None:
        session.env_before.update(self.s.env_before)
        for site in self.s.log.sites.values():
            session.log.event(site.filename, site.api, site.before, site.after, site.cls, site.why)
        for w in self.warnings:
            session.warn(w)


def disable() -> None:
    """Restore every original. Safe to call when not enabled, and from any thread. Writes the log summary if a
    log is open. Functions captured while enabled stop redirecting. A step that fails does not stop the
    others:
    RestoreError (listing the failures) is raised after everything else was undone."""
    global _active
    with _lock:
        session = _active
        if session is None:
            return
        _active = None
        _shut(session)


def _shut(session: Any) -> None:
    """Switch a session off and undo it: every step runs even when an earlier one fails."""
    session.live = False
    session.mapper.switch_off()
    try:
        session.patcher.restore()
    finally:
        try:
            session.restore_env()
        finally:
            session.log.close()


def is_enabled() -> bool:
    return _active is not None


def current_target() -> Optional[Target]:
    return None if _active is None else _active.target


def summary() -> str:
    """The per-class counts and top call sites so far ("" when not enabled)."""
    return "" if _active is None else _active.log.summary()


def is_cuda_device(device: Any) -> bool:
    """True when `device` (str, torch.device, tensor) is CUDA or the redirect's target device. Use it in place
    of `device.type == "cuda"` checks so that they hold on every target."""
    dev = getattr(device, "device", device)
    kind = getattr(dev, "type", None)
    if kind is None:
        kind = str(dev).split(":", 1)[0]
    if kind == "cuda":
        return True
    return _active is not None and kind == _active.target.device_type


def print_summary_at_exit(on: bool = True) -> None:
    """Whether the active session prints its summary to stderr at exit (when its log prints one: rank 0)."""
    if _active is not None:
        _active.print_summary = on


def _at_exit() -> None:
    session = _active
    if session is None:
        return
    if getattr(session, "print_summary", False) and session.log.prints_summary():
        if session.log.sites or session.log.notes:
            print(session.log.summary(), file=sys.stderr)
    session.log.close()
