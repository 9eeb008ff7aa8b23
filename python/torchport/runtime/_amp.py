"""AMP: torch.autocast("cuda"), torch.cuda.amp.autocast / GradScaler / custom_fwd, get_autocast_gpu_dtype."""

from __future__ import annotations

import functools
import os
import sys
import warnings
from typing import Any, Callable

import torch

from torchport.runtime._log import MATCH, MISMATCH
from torchport.runtime._session import Session
from torchport.targets import CUDA_AMP_DTYPE

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_SKIP_FILES = ("typing_extensions.py", os.sep + "warnings.py")
_CUDA_AMP_FILE = os.path.join("cuda", "amp", "autocast_mode.py")


def user_depth() -> int:
    """The `depth` for log.hit() called from the same wrapper as this: the first caller outside torch
    (torch.cuda.amp.autocast calls super().__init__, so the direct caller is inside torch)."""
    d = 2
    f = sys._getframe(2)
    while f is not None and (
        f.f_code.co_filename.startswith(_TORCH_DIR) or f.f_code.co_filename.endswith(_SKIP_FILES)
    ):
        f = f.f_back
        d += 1
    return d if f is not None else 2


def _drop_filter(entry: Any) -> None:
    """Removes a warnings filter that install() added (disable())."""
    if entry in warnings.filters:
        warnings.filters.remove(entry)
        mutated = getattr(warnings, "_filters_mutated", None) or getattr(
            warnings, "_filters_mutated_lock_held", None
        )
        if mutated is not None:
            mutated()


def install(s: Session) -> None:
    p = s.patcher
    hit = s.log.hit
    amp = s.target.amp_device_type
    import torch.amp.autocast_mode as am
    import torch.amp.grad_scaler as gs

    # torch's FutureWarning for its deprecated torch.cuda.amp spellings advises torch.amp.X("cuda", ...):
    # CUDA's spelling, printed ahead of torchport's summary. Here they run as torch.amp.X(amp): the warning
    # is not shown, and the summary names each deprecated spelling once, with the target's.
    warnings.filterwarnings("ignore", r"`torch\.cuda\.amp\.[\w.]+\(.*\)` is deprecated", FutureWarning)
    entry = warnings.filters[0]
    s.patcher.undo.append(lambda: _drop_filter(entry))
    said: set[str] = set()

    def deprecated(via_cuda_amp: bool, name: str, spelling: str) -> None:
        if via_cuda_amp and name not in said:
            said.add(name)
            s.log.note(
                f"torch.cuda.amp.{name} is deprecated by torch (its FutureWarning is not shown): "
                f"{spelling} here; `torchport migrate` rewrites it"
            )

    orig_autocast_init = am.autocast.__init__

    cuda_dtype = getattr(torch, CUDA_AMP_DTYPE, None) if CUDA_AMP_DTYPE else None
    target_default = getattr(torch, "get_autocast_dtype", None)  # before it is patched below

    @functools.wraps(orig_autocast_init)
    def autocast_init(self: Any, device_type: str, *a: Any, **kw: Any) -> None:
        if device_type == "cuda":
            # torch.autocast(device_type, dtype=None, ...): without a dtype, CUDA computes in its default
            # (float16) and the target in its own, which may differ (bfloat16 on cpu): a dtype change.
            dtype = a[0] if a else kw.get("dtype")
            target_dtype = target_default(amp) if target_default is not None else None
            cls, why = MATCH, ""
            if dtype is None and cuda_dtype is not None and target_dtype not in (None, cuda_dtype):
                theirs = str(target_dtype).removeprefix("torch.")
                cls, why = (
                    MISMATCH,
                    f"autocast computes in {theirs} ({amp}'s default), not in CUDA's default "
                    f"{CUDA_AMP_DTYPE}: pass dtype=torch.{CUDA_AMP_DTYPE} to keep the original's dtype",
                )
            hit("torch.autocast", ("device_type", "cuda"), ("device_type", amp), cls, why, user_depth())
            deprecated(
                type(self).__module__.startswith("torch.cuda.amp"), "autocast", f'torch.amp.autocast("{amp}")'
            )
            device_type = amp
        orig_autocast_init(self, device_type, *a, **kw)

    p.set(am.autocast, "__init__", autocast_init)

    orig_scaler_init = gs.GradScaler.__init__

    @functools.wraps(orig_scaler_init)
    def scaler_init(self: Any, device: str = "cuda", *a: Any, **kw: Any) -> None:
        if device == "cuda":
            hit("GradScaler", ("device", "cuda"), ("device", amp), MATCH, "", user_depth())
            deprecated(
                type(self).__module__.startswith("torch.cuda.amp"),
                "GradScaler",
                f'torch.amp.GradScaler("{amp}")',
            )
            device = amp
        orig_scaler_init(self, device, *a, **kw)

    p.set(gs.GradScaler, "__init__", scaler_init)

    def _decorator(orig: Callable[..., Any], api: str) -> Callable[..., Any]:
        @functools.wraps(orig)
        def deco(*a: Any, device_type: str = "cuda", **kw: Any) -> Any:
            if device_type == "cuda":
                hit(api, ("device_type", "cuda"), ("device_type", amp), MATCH, "", user_depth())
                name = api.rsplit(".", 1)[-1]
                # torch.cuda.amp.custom_fwd/custom_bwd call torch.amp's with device_type="cuda"
                via = sys._getframe(1).f_code.co_filename.endswith(_CUDA_AMP_FILE)
                deprecated(via, name, f'torch.amp.{name}(device_type="{amp}")')
                device_type = amp
            return orig(*a, device_type=device_type, **kw)

        return deco

    for name in ("custom_fwd", "custom_bwd"):
        orig = getattr(am, name)
        w = _decorator(orig, f"torch.amp.{name}")
        p.set(am, name, w)
        if getattr(torch.amp, name, None) is orig:
            p.set(torch.amp, name, w)

    # dtype/enabled queries that mean "the GPU"
    get_dtype = torch.get_autocast_dtype
    set_dtype = torch.set_autocast_dtype
    is_enabled = torch.is_autocast_enabled
    set_enabled = torch.set_autocast_enabled

    def get_autocast_gpu_dtype() -> torch.dtype:
        hit(
            "torch.get_autocast_gpu_dtype",
            "torch.get_autocast_gpu_dtype()",
            f"torch.get_autocast_dtype({amp!r})",
        )
        return get_dtype(amp)

    def set_autocast_gpu_dtype(dtype: torch.dtype) -> None:
        hit(
            "torch.set_autocast_gpu_dtype",
            "torch.set_autocast_gpu_dtype()",
            f"torch.set_autocast_dtype({amp!r})",
        )
        set_dtype(amp, dtype)

    def get_autocast_dtype(device_type: str) -> torch.dtype:
        if device_type == "cuda":
            hit("torch.get_autocast_dtype", ("device_type", "cuda"), ("device_type", amp))
            device_type = amp
        return get_dtype(device_type)

    def set_autocast_dtype(device_type: str, dtype: torch.dtype) -> None:
        if device_type == "cuda":
            hit("torch.set_autocast_dtype", ("device_type", "cuda"), ("device_type", amp))
            device_type = amp
        set_dtype(device_type, dtype)

    def is_autocast_enabled(*args: Any) -> bool:
        if not args:
            hit(
                "torch.is_autocast_enabled",
                "torch.is_autocast_enabled()",
                f"torch.is_autocast_enabled({amp!r})",
            )
            return is_enabled(amp)
        if args[0] == "cuda":
            hit("torch.is_autocast_enabled", ("device_type", "cuda"), ("device_type", amp))
            return is_enabled(amp)
        return is_enabled(*args)

    def set_autocast_enabled(*args: Any) -> None:
        if len(args) == 1:
            hit(
                "torch.set_autocast_enabled",
                "torch.set_autocast_enabled(bool)",
                f"torch.set_autocast_enabled({amp!r})",
            )
            return set_enabled(amp, args[0])
        if args and args[0] == "cuda":
            hit("torch.set_autocast_enabled", ("device_type", "cuda"), ("device_type", amp))
            return set_enabled(amp, *args[1:])
        return set_enabled(*args)

    for name, fn in (
        ("get_autocast_gpu_dtype", get_autocast_gpu_dtype),
        ("set_autocast_gpu_dtype", set_autocast_gpu_dtype),
        ("get_autocast_dtype", get_autocast_dtype),
        ("set_autocast_dtype", set_autocast_dtype),
        ("is_autocast_enabled", is_autocast_enabled),
        ("set_autocast_enabled", set_autocast_enabled),
    ):
        if hasattr(torch, name):
            p.set(torch, name, fn)

    # torch.cuda.amp.common.amp_definitely_not_available(): "is there a device for AMP?" -> the target
    import torch.cuda.amp.common as common

    p.set(common, "amp_definitely_not_available", lambda: False)
