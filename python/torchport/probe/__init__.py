"""Layer-by-layer accuracy probing: record a run (`torchport probe`), then compare two runs
(`torchport compare`) to find where the numbers first drift.

``torchport.probe(model, out="dump", level="module")`` is a context manager; this package is
itself callable so that both ``torchport.probe(...)`` and ``torchport.probe.probe(...)`` work.
Importing it does not import torch (recording does; comparing only needs numpy).
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchport.probe.recorder import Probe

__all__ = ["probe", "Probe", "compare_dumps", "open_dump", "DumpError"]


def probe(model: Any = None, out: Any = "probe_dump", level: str = "module", **kwargs: Any) -> Probe:
    """Record per-module (``level="module"``) or per-ATen-op (``level="op"``) statistics of
    everything run inside the ``with`` block into the dump directory ``out``.

    Keyword arguments: ``full_tensors`` (save tensors as .npy), ``max_tensor_bytes`` (budget,
    default 1 GiB), ``steps`` (stop after N optimizer steps), ``filter`` (regex on names).
    """
    from torchport.probe.recorder import Probe

    return Probe(model, out=out, level=level, **kwargs)


def __getattr__(name: str) -> Any:
    if name == "Probe":
        from torchport.probe.recorder import Probe

        return Probe
    if name == "compare_dumps":
        from torchport.probe.compare import compare_dumps

        return compare_dumps
    if name in ("open_dump", "DumpError"):
        from torchport.probe import dump

        return getattr(dump, name)
    raise AttributeError(f"module 'torchport.probe' has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    def __call__(
        self, model: Any = None, out: Any = "probe_dump", level: str = "module", **kwargs: Any
    ) -> Any:
        return probe(model, out=out, level=level, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
