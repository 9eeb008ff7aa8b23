"""Stand-in of torch_npu under `torchport rehearse --target npu` (resolved by runtime.StandinFinder; a real
torch_npu always wins). The device, its module and its collectives are set up by the rehearsal runtime."""

import sys

import torch

from torchport.rehearse import _standin

npu = _standin.device_module("npu")
sys.modules[__name__ + ".npu"] = npu
sys.modules[__name__ + ".npu.amp"] = npu.amp

from torchport.rehearse.standins.torch_npu import profiler  # noqa: E402

sys.modules[__name__ + ".profiler"] = profiler


def npu_fusion_attention(*args, **kwargs):  # noqa: ANN002, ANN003, ANN201
    """torch_npu's fused attention. Rehearsal does not emulate it: it raises, as code the user must port."""
    raise NotImplementedError(
        "torch_npu.npu_fusion_attention is not emulated by torchport rehearse: its signature differs from "
        "flash_attn (see the migrate report); use torch.nn.functional.scaled_dot_product_attention"
    )


__all__ = ["npu", "npu_fusion_attention", "profiler"]
_ = torch
