"""`torch.npu.amp` / `torch_npu.npu.amp`, `torch.mlu.amp`, `torch.musa.amp` on the rehearsal device: torch.amp
with the device's type, as the vendors' own amp modules are (torch_npu/npu/amp/autocast_mode.py subclasses
torch.amp.autocast_mode.autocast with device "npu", reference §1.1)."""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any, Optional

import torch


def build(target: str) -> ModuleType:
    mod = ModuleType(f"torchport.rehearse.amp_{target}", f"stand-in of {target}'s amp module")

    class autocast(torch.amp.autocast_mode.autocast):  # noqa: N801 (the vendors' name)
        def __init__(
            self,
            enabled: bool = True,
            dtype: torch.dtype = torch.float16,
            cache_enabled: bool = True,
        ) -> None:
            super().__init__(target, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)

    class GradScaler(torch.amp.GradScaler):
        def __init__(
            self,
            init_scale: float = 2.0**16,
            growth_factor: float = 2.0,
            backoff_factor: float = 0.5,
            growth_interval: int = 2000,
            enabled: bool = True,
            **kwargs: Any,
        ) -> None:
            super().__init__(
                target,
                init_scale=init_scale,
                growth_factor=growth_factor,
                backoff_factor=backoff_factor,
                growth_interval=growth_interval,
                enabled=enabled,
            )

    def custom_fwd(fwd: Any = None, *, cast_inputs: Optional[torch.dtype] = None) -> Any:
        if fwd is None:
            return functools.partial(custom_fwd, cast_inputs=cast_inputs)
        return torch.amp.custom_fwd(fwd, device_type=target, cast_inputs=cast_inputs)

    def custom_bwd(bwd: Any) -> Any:
        return torch.amp.custom_bwd(bwd, device_type=target)

    mod.autocast = autocast  # type: ignore[attr-defined]
    mod.GradScaler = GradScaler  # type: ignore[attr-defined]
    mod.custom_fwd = custom_fwd  # type: ignore[attr-defined]
    mod.custom_bwd = custom_bwd  # type: ignore[attr-defined]
    mod.__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]  # type: ignore[attr-defined]
    return mod
