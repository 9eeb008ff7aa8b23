"""Per-target facts: one table that drives `torchport run`, `import torchport.auto` and check-ops.

Every fact carries its source in `Target.sources` (field name -> where it came from). Abbreviations:

- GUIDE: /work/shared/GUIDE.md §2 targets table.
- PEERS: /work/shared/reference/peer-migration-tools.md (section given).
- BACKENDS: /work/shared/reference/device-backends-and-accuracy-tools.md (section given).
- TORCH: the installed torch 2.13.0 (`torch.distributed.Backend.default_device_backend_map`,
  `torch.profiler.ProfilerActivity.__members__`, `torch.amp.autocast_mode.is_autocast_available`).
- VENDOR-UNVERIFIED: the vendor's public documentation as we remember it, not in /work/shared; treat as
  a default to confirm on hardware.

Importing this module costs nothing: it imports neither torch nor any vendor package. Names here are shared
API (check-ops imports them): only add, never rename.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Mapping, Optional

__all__ = [
    "CUDA_ENV_VARS",
    "TARGETS",
    "TARGET_NAMES",
    "Target",
    "TargetUnavailable",
    "get_target",
    "missing_package_message",
    "vendor_package_missing",
]

# CUDA / NCCL environment variables a CUDA script or launcher commonly sets. When one is set and the target
# has no equivalent in `Target.env_map`, `torchport run` warns that it is ignored.
# Source: PEERS §3.1 (Cambricon env_migration.py maps CUDA_VISIBLE_DEVICES, PYTORCH_CUDA_ALLOC_CONF,
# TORCH_NCCL_*)
# plus the variables the CUDA/NCCL/PyTorch docs name for the same jobs.
CUDA_ENV_VARS: tuple[str, ...] = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_LAUNCH_BLOCKING",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "CUBLAS_WORKSPACE_CONFIG",
    "NVIDIA_TF32_OVERRIDE",
    "NCCL_DEBUG",
    "NCCL_SOCKET_IFNAME",
    "NCCL_IB_DISABLE",
    "NCCL_P2P_DISABLE",
    "TORCH_NCCL_BLOCKING_WAIT",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING",
    "TORCH_NCCL_TRACE_BUFFER_SIZE",
)


@dataclass(frozen=True)
class Target:
    """What one target needs and what a CUDA concept becomes on it."""

    name: str  # the `--target` value
    title: str  # human name
    device_type: str  # the torch device string ("npu" in torch.device("npu:0"))
    device_module: str  # the module torch.get_device_module(device_type) returns
    vendor_package: Optional[str]  # import name of the out-of-tree package, None when in-tree
    install_hint: str  # what to install, shown when the package is missing
    backend: str  # collective backend that replaces nccl
    visible_devices_env: tuple[str, ...]  # the target's visible-devices variable(s)
    env_map: Mapping[str, str]  # CUDA variable -> the target's variable with the same job
    env_prefix_map: Mapping[str, str]  # CUDA variable prefix -> target prefix (TORCH_NCCL_ -> TORCH_CNCL_)
    amp_device_type: str  # device_type for torch.autocast / torch.amp.GradScaler
    float64: bool  # False: the device has no float64 (warn per call site; fail with --strict)
    fallback_env: Optional[str]  # variable that controls the CPU fallback of unsupported ops
    fallback_env_note: str  # what values of fallback_env mean
    profiler_activity: Optional[str]  # torch.profiler.ProfilerActivity member for the device, None: none
    has_device_index: bool  # False: one device only, "cuda:N" collapses to the one device
    sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def in_tree(self) -> bool:
        """True when torch itself provides the device (no vendor package)."""
        return self.vendor_package is None


_GUIDE = "GUIDE §2 targets table"
_TORCH_MAP = "TORCH: Backend.default_device_backend_map in torch 2.13.0"
_TORCH_PROF = "TORCH: torch.profiler.ProfilerActivity members CPU/XPU/MTIA/CUDA/HPU/PrivateUse1 in 2.13.0"
_PRIVATEUSE1 = "BACKENDS §1, §2.1: out-of-tree vendors are PrivateUse1 devices (ProfilerActivity.PrivateUse1)"

TARGETS: dict[str, Target] = {
    "npu": Target(
        name="npu",
        title="Huawei Ascend NPU",
        device_type="npu",
        device_module="torch.npu",
        vendor_package="torch_npu",
        install_hint=(
            "install the Ascend CANN toolkit, then `pip install torch-npu` matching your torch version "
            "(https://gitee.com/ascend/pytorch)"
        ),
        backend="hccl",
        visible_devices_env=("ASCEND_RT_VISIBLE_DEVICES",),
        env_map={
            "CUDA_VISIBLE_DEVICES": "ASCEND_RT_VISIBLE_DEVICES",
            "PYTORCH_CUDA_ALLOC_CONF": "PYTORCH_NPU_ALLOC_CONF",
            "CUDA_LAUNCH_BLOCKING": "ASCEND_LAUNCH_BLOCKING",
            "NCCL_SOCKET_IFNAME": "HCCL_SOCKET_IFNAME",
        },
        env_prefix_map={},
        amp_device_type="npu",
        float64=False,
        fallback_env="TORCH_NPU_FALLBACK_CPU_DISABLE",
        fallback_env_note="1 turns CPU fallbacks into errors; default 0 (fallback with a warning)",
        profiler_activity="PrivateUse1",
        has_device_index=True,
        sources={
            "device_type": _GUIDE,
            "device_module": _GUIDE + "; BACKENDS §1.1 (torch_npu registers torch.npu)",
            "vendor_package": _GUIDE,
            "backend": _GUIDE + "; BACKENDS §1.1 (Backend.register_backend('hccl', devices=['npu']))",
            "visible_devices_env": _GUIDE,
            "env_map": (
                "CUDA_VISIBLE_DEVICES: GUIDE; PYTORCH_NPU_ALLOC_CONF, ASCEND_LAUNCH_BLOCKING, "
                "HCCL_SOCKET_IFNAME: "
                "VENDOR-UNVERIFIED (Ascend environment-variable reference)"
            ),
            "float64": "GUIDE §2 (the NPU AI Core has no float64); PEERS §2 (transfer_to_npu downgrades it)",
            "fallback_env": "BACKENDS §1.1 (VariableFallbackKernel.cpp, TORCH_NPU_FALLBACK_CPU_DISABLE.md)",
            "profiler_activity": _PRIVATEUSE1 + " (torch_npu aliases it ProfilerActivity.NPU)",
        },
    ),
    "mlu": Target(
        name="mlu",
        title="Cambricon MLU",
        device_type="mlu",
        device_module="torch.mlu",
        vendor_package="torch_mlu",
        install_hint="install the Cambricon Neuware SDK, then the torch_mlu wheel for your torch version",
        backend="cncl",
        visible_devices_env=("MLU_VISIBLE_DEVICES",),
        env_map={
            "CUDA_VISIBLE_DEVICES": "MLU_VISIBLE_DEVICES",
            "PYTORCH_CUDA_ALLOC_CONF": "PYTORCH_MLU_ALLOC_CONF",
        },
        env_prefix_map={"TORCH_NCCL_": "TORCH_CNCL_"},
        amp_device_type="mlu",
        float64=True,
        fallback_env="ENABLE_FALLBACK_TO_CPU",
        fallback_env_note="0 turns the CPU fallback into a NotImplemented error; default on",
        profiler_activity="PrivateUse1",
        has_device_index=True,
        sources={
            "device_type": _GUIDE,
            "backend": _GUIDE + "; PEERS §3.1 (nccl→cncl)",
            "visible_devices_env": _GUIDE,
            "env_map": "PEERS §3.1 (torch_mlu/utils/gpu_migration/env_migration.py)",
            "env_prefix_map": "PEERS §3.1 (TORCH_NCCL_* → TORCH_CNCL_*)",
            "float64": "GUIDE §2 names no float64 gap for MLU",
            "fallback_env": "BACKENDS §1.2 (MLUFallback.cpp)",
            "profiler_activity": _PRIVATEUSE1,
        },
    ),
    "musa": Target(
        name="musa",
        title="Moore Threads MUSA GPU",
        device_type="musa",
        device_module="torch.musa",
        vendor_package="torch_musa",
        install_hint="install the MUSA toolkit and Moore Threads' torch + torch_musa wheels (it needs a "
        "patched torch)",
        backend="mccl",
        visible_devices_env=("MUSA_VISIBLE_DEVICES",),
        env_map={"CUDA_VISIBLE_DEVICES": "MUSA_VISIBLE_DEVICES"},
        env_prefix_map={},
        amp_device_type="musa",
        float64=True,
        fallback_env=None,
        fallback_env_note="no CPU fallback in torch_musa: unsupported ops raise (BACKENDS §1.4, inference)",
        profiler_activity="PrivateUse1",
        has_device_index=True,
        sources={
            "device_type": _GUIDE,
            "backend": _GUIDE + "; BACKENDS §1.4; PEERS §3.3 (nccl→mccl)",
            "visible_devices_env": _GUIDE,
            "fallback_env": "BACKENDS §1.4",
            "profiler_activity": _PRIVATEUSE1 + " (torch_musa aliases ProfilerActivity.MUSA)",
        },
    ),
    "xpu": Target(
        name="xpu",
        title="Intel GPU (XPU)",
        device_type="xpu",
        device_module="torch.xpu",
        vendor_package=None,
        install_hint="install a torch build with XPU support (pip install torch --index-url "
        "https://download.pytorch.org/whl/xpu) and the Intel GPU driver",
        backend="xccl",
        visible_devices_env=("ZE_AFFINITY_MASK",),
        env_map={"CUDA_VISIBLE_DEVICES": "ZE_AFFINITY_MASK"},
        env_prefix_map={},
        amp_device_type="xpu",
        float64=True,
        fallback_env="PYTORCH_ENABLE_XPU_FALLBACK",
        fallback_env_note="1 enables the CPU fallback (PYTORCH_DEBUG_XPU_FALLBACK=1 logs each one)",
        profiler_activity="XPU",
        has_device_index=True,
        sources={
            "device_type": _GUIDE,
            "device_module": "TORCH: torch.get_device_module('xpu') is torch.xpu",
            "backend": _GUIDE + "; " + _TORCH_MAP,
            "visible_devices_env": _GUIDE,
            "fallback_env": "BACKENDS §1.3 (XPUFallback.cpp)",
            "profiler_activity": _TORCH_PROF,
        },
    ),
    "mps": Target(
        name="mps",
        title="Apple GPU (MPS)",
        device_type="mps",
        device_module="torch.mps",
        vendor_package=None,
        install_hint="use a macOS arm64 torch build (pip install torch) on Apple silicon",
        backend="gloo",
        visible_devices_env=(),
        env_map={},
        env_prefix_map={},
        amp_device_type="mps",
        float64=False,
        fallback_env="PYTORCH_ENABLE_MPS_FALLBACK",
        fallback_env_note="1 enables the CPU fallback for ops MPS lacks",
        profiler_activity=None,
        has_device_index=False,
        sources={
            "device_type": _GUIDE,
            "device_module": "TORCH: torch.get_device_module('mps') is torch.mps",
            "backend": _GUIDE + " (none, gloo on CPU); " + _TORCH_MAP,
            "float64": "GUIDE §2 (MPS has no float64)",
            "fallback_env": "BACKENDS §1.5 (MPSFallback.mm)",
            "profiler_activity": _TORCH_PROF + " (no MPS member)",
            "has_device_index": "one GPU per Mac; torch accepts only mps:0",
        },
    ),
    "hpu": Target(
        name="hpu",
        title="Intel Gaudi (HPU)",
        device_type="hpu",
        device_module="torch.hpu",
        vendor_package="habana_frameworks.torch",
        install_hint="install the Intel Gaudi software stack (habana_frameworks, "
        "https://docs.habana.ai/en/latest/Installation_Guide/)",
        backend="hccl",
        visible_devices_env=("HABANA_VISIBLE_MODULES",),
        env_map={"CUDA_VISIBLE_DEVICES": "HABANA_VISIBLE_MODULES"},
        env_prefix_map={},
        amp_device_type="hpu",
        float64=True,
        fallback_env=None,
        fallback_env_note="",
        profiler_activity="HPU",
        has_device_index=True,
        sources={
            "device_type": _GUIDE,
            "vendor_package": _GUIDE + " (habana_frameworks)",
            "backend": _GUIDE,
            "visible_devices_env": _GUIDE + " (module ids, not ordinals: the mapping is 'modified')",
            "profiler_activity": _TORCH_PROF,
        },
    ),
    "cpu": Target(
        name="cpu",
        title="CPU",
        device_type="cpu",
        device_module="torch.cpu",
        vendor_package=None,
        install_hint="any torch build",
        backend="gloo",
        visible_devices_env=(),
        env_map={},
        env_prefix_map={},
        amp_device_type="cpu",
        float64=True,
        fallback_env=None,
        fallback_env_note="",
        profiler_activity=None,
        has_device_index=False,
        sources={
            "device_type": _GUIDE,
            "device_module": "TORCH: torch.get_device_module('cpu') is torch.cpu",
            "backend": _GUIDE + "; " + _TORCH_MAP,
            "amp_device_type": "TORCH: is_autocast_available('cpu') is True",
            "has_device_index": "TORCH: CPU tensors ignore the device index",
        },
    ),
}

TARGET_NAMES: tuple[str, ...] = tuple(TARGETS) + ("auto",)


class TargetUnavailable(Exception):
    """The target cannot run here: its package is missing or its device is absent. The message says why."""


def get_target(name: str) -> Target:
    """The Target called `name` (not "auto": see torchport.runtime.resolve_target). Raises KeyError."""
    try:
        return TARGETS[name]
    except KeyError:
        raise KeyError(f"unknown target {name!r}; choose one of: {', '.join(TARGET_NAMES)}") from None


def vendor_package_missing(target: Target) -> bool:
    """True when the target's out-of-tree package is not installed (checked without importing it)."""
    if target.vendor_package is None:
        return False
    top = target.vendor_package.split(".")[0]
    try:
        return importlib.util.find_spec(top) is None
    except (ImportError, ValueError):
        return True


def missing_package_message(target: Target) -> str:
    """One clear sentence naming what to install for `target`."""
    return (
        f"target {target.name} ({target.title}) needs the Python package {target.vendor_package!r}, "
        f"which is not installed: {target.install_hint}"
    )
