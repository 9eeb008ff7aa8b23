"""Shared by the stand-in packages: the registered device module, and vendor extras torch itself lacks."""

from __future__ import annotations

from types import ModuleType, SimpleNamespace

import torch

from torchport.rehearse import session as state


def device_module(target: str) -> ModuleType:
    s = state.session()
    if s is None or s.target != target:
        raise ImportError(
            f"the {target} stand-in is only available under `torchport rehearse --target {target}`"
        )
    mod: ModuleType = getattr(torch, target)
    if target == "npu" and not hasattr(mod, "matmul"):
        # torch_npu.npu.matmul.allow_tf32 (catalogue backends.json); the NPU computes fp32 matmuls its own way
        mod.matmul = SimpleNamespace(allow_tf32=False)  # type: ignore[attr-defined]
    _distributed_extras(target)
    return mod


def _distributed_extras(target: str) -> None:
    import torch.distributed as dist

    if target == "npu" and dist.is_available() and not hasattr(dist, "is_hccl_available"):
        dist.is_hccl_available = lambda: True  # type: ignore[attr-defined]


def mlu_backends() -> None:
    """torch.backends.cnnl / torch.backends.mlu / torch.backends.mlufusion, as torch_mlu adds them
    (reference §1.2); the catalogue writes their allow_tf32 / enabled flags."""
    import sys

    for name, ns in (
        ("cnnl", SimpleNamespace(allow_tf32=False, enabled=True, deterministic=False, benchmark=False)),
        ("mlu", SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False))),
        ("mlufusion", SimpleNamespace(enabled=True)),
    ):
        if not hasattr(torch.backends, name):
            setattr(torch.backends, name, ns)
            sys.modules[f"torch.backends.{name}"] = ns  # type: ignore[assignment]
    pa = torch.profiler.ProfilerActivity
    if not hasattr(pa, "MLU"):
        try:
            pa.MLU = pa.PrivateUse1  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            pass
