"""The torch.cuda names the active session leaves bound to their CUDA original (tests/python/
test_runtime_coverage.py checks there are none). A module of its own, because it asks the runtime package for
the active session, and the package imports _extras: _extras never imports the package back.
"""

from __future__ import annotations

from typing import Optional

import torch

from torchport.runtime._extras import coverage_rows
from torchport.runtime._session import Session


def untouched_cuda_names(s: Optional[Session] = None) -> list[str]:
    """torch.cuda.__all__ names still bound to their CUDA original while enabled (n/a rows excepted)."""
    import torchport.runtime as rt

    sess = s or rt._active
    if sess is None:
        return []
    na = {r["api"][len("torch.cuda.") :] for r in coverage_rows() if r["cpu"].startswith("n/a")}
    na |= {a.split(" ")[0] for a in na}
    patched = {name for owner, name, _ in sess.patcher.records if owner is torch.cuda}
    return sorted(n for n in getattr(torch.cuda, "__all__", ()) if n not in patched and n not in na)
