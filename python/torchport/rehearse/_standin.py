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
    if target == "npu":
        for name, flags in (("matmul", HF32Flags("matmul")), ("conv", HF32Flags("conv"))):
            if not isinstance(getattr(mod, name, None), HF32Flags):
                setattr(mod, name, flags)
    _distributed_extras(target)
    return mod


class HF32Flags:
    """torch_npu.npu.matmul / torch_npu.npu.conv as the vendor has them: in the torch-npu wheels they are
    npu_config._allowHF32Matmul() / _allowHF32Conv(), whose __setattr__ acts on allow_hf32 (matmul also
    cube_math_type) and drops any other name without a word, and whose __getattr__ answers None for it.
    The stand-in keeps those semantics and warns where torch_npu is silent (`matmul.allow_tf32 = True`
    does nothing on an NPU). Defaults as the vendor's getters read an unset option: matmul off, conv on.
    HF32 itself is not emulated: the rehearsal device computes float32."""

    def __init__(self, which: str) -> None:
        handled = ("allow_hf32", "cube_math_type") if which == "matmul" else ("allow_hf32",)
        object.__setattr__(self, "_which", which)
        object.__setattr__(self, "_values", {"allow_hf32": which == "conv", "cube_math_type": None})
        object.__setattr__(self, "_handled", handled)

    def __setattr__(self, name: str, value: object) -> None:
        if name not in self._handled:
            import warnings

            warnings.warn(
                f"torch_npu.npu.{self._which}.{name} = {value!r} has no effect: torch_npu's "
                f"{self._which} object handles only {' and '.join(self._handled)} and ignores the rest "
                "(torchport rehearse)",
                stacklevel=2,
            )
            return
        if name == "allow_hf32" and not isinstance(value, bool):
            raise TypeError(f"allow_hf32 must be a bool, but got {type(value).__name__}")
        self._values[name] = value

    def __getattr__(self, name: str) -> object:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._values.get(name) if name in self._handled else None


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
