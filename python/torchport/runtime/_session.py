"""One enabled redirect: the target, the device mapper, the log, the patch records and the policies."""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from typing import Any, Optional

import torch

from torchport.runtime._devices import DeviceMapper
from torchport.runtime._log import MISMATCH, CallLog
from torchport.runtime._patcher import Patcher
from torchport.targets import (
    TARGETS,
    Target,
    TargetUnavailable,
    get_target,
    missing_package_message,
    vendor_package_missing,
)

CUDA_AVAILABLE_MODES = ("truth", "target", "user")
_INTERNAL = (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(os.path.abspath(__file__)) + os.sep)


class TorchportWarning(UserWarning):
    """A redirect that the user should know about (float64 on a target without it, an unmapped variable)."""


class Float64Unsupported(RuntimeError):
    """--strict: a float64 tensor was requested on a target that has no float64."""

    torchport_short = True  # `torchport run` prints the located message without a traceback


def _import_vendor(target: Target) -> None:
    if target.vendor_package is None:
        return
    if vendor_package_missing(target):
        raise TargetUnavailable(missing_package_message(target))
    try:
        importlib.import_module(target.vendor_package)
    except Exception as e:  # a broken vendor install: say so, without its traceback
        raise TargetUnavailable(
            f"target {target.name}: importing {target.vendor_package} failed ({type(e).__name__}: {e}); "
            f"check the install: {target.install_hint}"
        ) from None


# The oldest torch the runtime starts on: torch 2.1 lacks torch.get_device_module, which every target's
# redirect starts from. Supported (the runtime tests pass, in CI) are 2.13 and 2.14 (README, "Supported
# torch"); on 2.4.1 the runtime starts but 55 of 488 runtime tests fail (measured for issue 33: no
# torch.accelerator, dynamo's DeviceInterface rejects torchport's Event class, ...).
MIN_TORCH = "2.4"
SUPPORTED_TORCH = "2.13"


def device_module(target: Target) -> Any:
    """torch.get_device_module(target.device_type), with a clear error when torch does not know the device."""
    if not hasattr(torch, "get_device_module"):  # torch 2.1 has none
        raise TargetUnavailable(
            f"torchport's runtime needs torch {MIN_TORCH} or later (torch.get_device_module), and is tested "
            f"on {SUPPORTED_TORCH} and later; this is torch {torch.__version__}: install a newer torch "
            "(README, 'Supported torch')"
        )
    try:
        return torch.get_device_module(target.device_type)
    except Exception as e:
        raise TargetUnavailable(
            f"target {target.name}: torch {torch.__version__} has no {target.device_type!r} device module "
            f"({e}); {target.install_hint}"
        ) from None


def check_available(target: Target) -> Any:
    """Import the vendor package and return the device module; raise TargetUnavailable with the reason."""
    _import_vendor(target)
    mod = device_module(target)
    if target.device_type == "cpu":
        return mod
    try:
        present = bool(mod.is_available())
    except Exception:
        present = False
    if not present:
        who = target.vendor_package or f"torch {torch.__version__}"
        env = (
            f" (visible-devices variable: {', '.join(target.visible_devices_env)})"
            if target.visible_devices_env
            else ""
        )
        raise TargetUnavailable(
            f"target {target.name}: {who} is importable but no {target.title} device is visible "
            f"({target.device_module}.is_available() is False){env}; check the driver and the device, or use "
            f"--target cpu"
        )
    return mod


def cuda_present() -> bool:
    """True when torch's own accelerator is CUDA and it is usable here (a real CUDA machine)."""
    acc = getattr(torch, "accelerator", None)
    if acc is None:
        return bool(torch.cuda.is_available())
    try:
        if not acc.is_available():
            return False
        cur = acc.current_accelerator()
    except Exception:
        return False
    return cur is not None and cur.type == "cuda"


# What "auto" resolves to on a machine with CUDA: CUDA itself, so nothing is redirected.
CUDA_PASSTHROUGH = Target(
    name="cuda",
    title="NVIDIA CUDA (present: nothing is redirected)",
    device_type="cuda",
    device_module="torch.cuda",
    vendor_package=None,
    install_hint="",
    backend="nccl",
    visible_devices_env=("CUDA_VISIBLE_DEVICES",),
    env_map={},
    env_prefix_map={},
    amp_device_type="cuda",
    float64=True,
    fallback_env=None,
    fallback_env_note="",
    profiler_activity="CUDA",
    has_device_index=True,
    sources={"device_type": "TORCH: torch.accelerator.current_accelerator() is cuda"},
)


def resolve_target(name: str) -> Target:
    """The Target for `name`; "auto" picks the accelerator that is present, otherwise cpu. When CUDA itself is
    present, "auto" gives CUDA_PASSTHROUGH: enable() then redirects nothing."""
    if name != "auto":
        return get_target(name)
    if cuda_present():
        return CUDA_PASSTHROUGH
    for t in TARGETS.values():  # out-of-tree packages first: importing one registers its device
        if t.vendor_package is not None and not vendor_package_missing(t):
            try:
                check_available(t)
                return t
            except TargetUnavailable:
                continue
    acc = getattr(torch, "accelerator", None)
    try:
        cur = acc.current_accelerator() if acc is not None and acc.is_available() else None
    except Exception:
        cur = None
    if cur is not None:
        for t in TARGETS.values():
            if t.device_type == cur.type:
                return t
    return TARGETS["cpu"]


class Session:
    def __init__(
        self,
        target: Target,
        *,
        log: Optional[str],
        strict: bool,
        cuda_available: str,
        log_all_ranks: bool,
        devmod: Any,
        track_sites: Optional[bool] = None,
    ) -> None:
        if cuda_available not in CUDA_AVAILABLE_MODES:
            raise ValueError(f"cuda_available must be one of {CUDA_AVAILABLE_MODES}, not {cuda_available!r}")
        self.target = target
        self.devmod = devmod
        self.mapper = DeviceMapper(target)
        self.log = CallLog(log, all_ranks=log_all_ranks, track=track_sites)
        self.strict = strict
        self.cuda_available = cuda_available
        self.patcher = Patcher()
        self.env_before: dict[str, Optional[str]] = {}
        self.is_cpu = target.device_type == "cpu"
        self._fp64_sites: set[tuple[str, int]] = set()
        self.live = True  # False once disable() ran: wrappers captured earlier stop redirecting

    # float64 policy: never downgrade; warn once per call site, or fail with --strict.
    def float64(self, api: str, depth: int = 2) -> None:
        if not self.live:
            return
        frame = sys._getframe(depth)
        while frame.f_back is not None and frame.f_code.co_filename.startswith(_INTERNAL):
            frame = frame.f_back  # torch's own code (Module.double -> Tensor.double): blame the user's line
            depth += 1
        filename, lineno = frame.f_code.co_filename, frame.f_lineno
        why = (
            f"{self.target.name} has no float64 ({self.target.sources.get('float64', 'targets table')}); "
            "torchport does not downgrade it"
        )
        self.log.hit(
            f"{api}[float64]",
            f"{api}(float64)",
            f"{api}(float64) on {self.target.device_type}",
            MISMATCH,
            why,
            depth + 1,
        )
        msg = f"{filename}:{lineno}: {api} with float64 on {self.target.device_type}: {why}"
        if self.strict:
            raise Float64Unsupported(msg + " (--strict)")
        if (filename, lineno) not in self._fp64_sites:
            self._fp64_sites.add((filename, lineno))
            warnings.warn_explicit(msg, TorchportWarning, filename, lineno)

    def when_imported(self, name: str, patch: Any) -> None:
        """Run patch(module) now if `name` is imported, else right after its first import."""
        mod = sys.modules.get(name)
        if mod is not None:
            patch(mod)
            return
        if getattr(self, "_post_import", None) is None:
            from torchport._lazy import PostImport

            finder = PostImport()
            self._post_import = finder
            sys.meta_path.insert(0, finder)

            def undo() -> None:
                if finder in sys.meta_path:
                    sys.meta_path.remove(finder)
                finder.callbacks.clear()

            self.patcher.undo.append(undo)
        self._post_import.callbacks[name] = patch

    def warn(self, msg: str) -> None:
        print(f"torchport: warning: {msg}", file=sys.stderr)

    def map_env(self) -> None:
        """CUDA variables set by the user become the target's, before the vendor package reads them."""
        from torchport.runtime._log import MATCH, MODIFIED
        from torchport.targets import CUDA_ENV_VARS

        t = self.target
        for var in sorted(
            set(CUDA_ENV_VARS) | {k for k in os.environ if k.startswith(("TORCH_NCCL_", "NCCL_"))}
        ):
            value = os.environ.get(var)
            if value is None:
                continue
            new = t.env_map.get(var)
            if new is None:
                for prefix, repl in t.env_prefix_map.items():
                    if var.startswith(prefix):
                        new = repl + var[len(prefix) :]
            if new is None:
                self.log.event(
                    "<environment>", var, f"{var}={value}", "ignored", MISMATCH, f"{t.name} has no equivalent"
                )
                self.warn(f"{var}={value} is set but {t.name} has no equivalent variable; it is ignored")
                continue
            if new in os.environ:
                if os.environ[new] != value:
                    self.warn(f"{var}={value} not copied to {new}: {new}={os.environ[new]} is already set")
                continue
            self.env_before[new] = None
            os.environ[new] = value
            # An inexact rename (environment.json status partial or unknown) is modified, with why.
            why = t.env_notes.get(var) or next(
                (n for p, n in t.env_notes.items() if p.endswith("*") and var.startswith(p[:-1])), ""
            )
            cls = MODIFIED if why else MATCH
            self.log.event("<environment>", var, f"{var}={value}", f"{new}={value}", cls, why)

    def restore_env(self) -> None:
        for var, before in self.env_before.items():
            if before is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = before
        self.env_before.clear()
