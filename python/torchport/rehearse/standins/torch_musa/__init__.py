"""Stand-in of torch_musa under `torchport rehearse --target musa` (resolved by runtime.StandinFinder; a real
torch_musa always wins)."""

import sys

from torchport.rehearse import _standin

musa = _standin.device_module("musa")
sys.modules[__name__ + ".musa"] = musa

__all__ = ["musa"]
