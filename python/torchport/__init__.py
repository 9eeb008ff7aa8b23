"""torchport: move CUDA PyTorch code to any accelerator.

The static tools (analyze, migrate, explain, targets) are a C++ program shipped inside this
package; the runtime tools (run, check-ops, probe, compare) are Python on top of torch.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
