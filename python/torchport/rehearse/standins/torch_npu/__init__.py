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


# torch_npu's operators that the rehearsal serves (torchport/rehearse/npu_fused.py): torch.ops.npu.<name>,
# exposed as torch_npu.<name> as the vendor's import does (torch_npu/_init/core/_exports.py)
from torchport.rehearse import npu_fused  # noqa: E402

for _name in npu_fused.serve(define=True):
    globals()[_name] = getattr(torch.ops.npu, _name)

__all__ = ["npu", "profiler", *npu_fused.SERVED]
_ = torch
