"""FlexAttention on the rehearsal device, as the vendor's import sets it up (data/targets.json
"flex_attention").

Torch's eager `torch.nn.attention.flex_attention.flex_attention` checks the device of its inputs
(`_validate_device`) and refuses any device but cuda, cpu, xpu, hpu and mps:
`ValueError: FlexAttention is only supported on CUDA, CPU, HPU, or MPS devices. Found input tensors on npu
device.` `import torch_npu` (the 2.13.0 wheel, torch_npu/utils/patch_flexattention.py, applied from
torch_npu/_init/patches/npu_patches.py) replaces that check and registers AutocastPrivateUse1 kernels for the
`flex_attention` and `flex_attention_backward` higher-order operators. This module does the same for the
rehearsed target, written from that description (nothing of the wheel is copied or imported):

- the check: for tensors of the target's device, only that query, key and value are on one device; for
  tensors of any other device, no check at all (the vendor's replacement drops torch's checks for them too,
  among them the refusal of FlexAttention backward on CPU tensors);
- autocast: under `torch.autocast(<target>)` the forward casts query, key and value to the autocast dtype and
  runs without the autocast key; the backward runs as is without the autocast key.

The attention itself is torch's: its eager implementation (`math` over the materialised scores) with the
rehearsal device's kernels, or what torch.compile makes of it (docs/rehearse.md, "FlexAttention").
"""

from __future__ import annotations

from typing import Any


def accept_on_device(target: str) -> None:
    """Replace torch's eager FlexAttention device check and register the autocast kernels, for `target`.
    Idempotent."""
    import torch
    import torch.nn.attention.flex_attention as fa
    from torch._C import DispatchKey
    from torch._higher_order_ops.flex_attention import flex_attention as fwd_hop
    from torch._higher_order_ops.flex_attention import flex_attention_backward as bwd_hop
    from torch.amp.autocast_mode import _cast

    if getattr(fa, "_torchport_rehearse_device", None) == target:
        return

    def _validate_device(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> None:
        if query.device.type != target:
            return
        if query.device != key.device or query.device != value.device:
            raise ValueError(
                "Expected query, key, and value to have the same device, "
                f"but got query.device: {query.device}, key.device: {key.device}, "
                f"and value.device: {value.device} instead."
            )

    fa._validate_device = _validate_device
    fa._torchport_rehearse_device = target  # type: ignore[attr-defined]

    autocast_key = torch._C.DispatchKeySet(DispatchKey.AutocastPrivateUse1)

    def forward_autocast(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *rest: Any) -> Any:
        device = query.device.type
        dtype = torch.get_autocast_dtype(device)
        query, key, value = (_cast(t, device, dtype) for t in (query, key, value))
        with torch._C._ExcludeDispatchKeyGuard(autocast_key):
            return fwd_hop(query, key, value, *rest)

    def backward_autocast(*args: Any) -> Any:
        with torch._C._ExcludeDispatchKeyGuard(autocast_key):
            return bwd_hop(*args)

    if not fwd_hop.has_kernel_for_dispatch_key(DispatchKey.AutocastPrivateUse1):
        fwd_hop.py_impl(DispatchKey.AutocastPrivateUse1)(forward_autocast)
    if not bwd_hop.has_kernel_for_dispatch_key(DispatchKey.AutocastPrivateUse1):
        bwd_hop.py_impl(DispatchKey.AutocastPrivateUse1)(backward_autocast)
