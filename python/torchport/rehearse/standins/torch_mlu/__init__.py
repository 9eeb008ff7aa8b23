"""Stand-in of torch_mlu under `torchport rehearse --target mlu` (resolved by runtime.StandinFinder; a real
torch_mlu always wins)."""

import sys

from torchport.rehearse import _standin

mlu = _standin.device_module("mlu")
sys.modules[__name__ + ".mlu"] = mlu
sys.modules[__name__ + ".mlu.amp"] = mlu.amp
_standin.mlu_backends()

__all__ = ["mlu"]
