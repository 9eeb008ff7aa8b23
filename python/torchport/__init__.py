"""torchport: move CUDA PyTorch code to any accelerator.

The static tools (analyze, migrate, explain, targets) are a C++ program shipped inside this
package; the runtime tools (run, check-ops, probe, compare) are Python on top of torch.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__", "check_ops", "probe"]


def __getattr__(name: str) -> object:
    # Lazy so that `import torchport` stays cheap (no torch): `torchport.probe(model, out=...)`
    # is the callable torchport.probe package (see torchport/probe/__init__.py).
    # Same for `torchport.check_ops(model, example_inputs, targets=[...])` (torchport/check_ops/__init__.py).
    if name in ("probe", "check_ops"):
        import importlib

        return importlib.import_module(f"torchport.{name}")
    if name in ("load_ipython_extension", "unload_ipython_extension"):
        # `%load_ext torchport` in a Jupyter kernel (torchport/runtime/notebook.py); `import torchport` stays
        # free of IPython and torch
        import importlib

        return getattr(importlib.import_module("torchport.runtime.notebook"), name)
    raise AttributeError(f"module 'torchport' has no attribute {name!r}")
