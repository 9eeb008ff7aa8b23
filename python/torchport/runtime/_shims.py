"""apex and pynvml, when the script imports them: native equivalents instead of CUDA-only code.

A meta-path finder serves `apex`, `apex.amp`, `apex.optimizers`, `apex.normalization`, `apex.parallel` and
`pynvml` from here while the redirect is on (NVIDIA apex and NVML need CUDA; the native torch equivalents do
not). disable() removes the finder and the modules.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any, Callable, Iterator, Optional, Sequence

import torch

from torchport.runtime._log import CALL, MISMATCH, MODIFIED, VALUE
from torchport.runtime._session import Session

SHIMS = ("apex", "pynvml")


def _apex(s: Session) -> dict[str, types.ModuleType]:
    hit = s.log.hit
    amp_type = s.target.amp_device_type
    apex = types.ModuleType("apex", "torchport: apex mapped to native torch equivalents")
    apex.__path__ = []  # a package, so `import apex.amp` works
    amp = types.ModuleType("apex.amp")
    optimizers = types.ModuleType("apex.optimizers")
    normalization = types.ModuleType("apex.normalization")
    parallel = types.ModuleType("apex.parallel")

    def initialize(
        models: Any, optimizers: Any = None, enabled: bool = True, opt_level: str = "O1", **kwargs: Any
    ) -> Any:
        if enabled and opt_level in ("O1", "O2", "O3"):
            cls, why = (
                (MODIFIED, f"forward runs under torch.autocast({amp_type!r})")
                if opt_level == "O1"
                else (
                    MISMATCH,
                    f"{opt_level} casts weights to half; torchport runs forward under autocast instead",
                )
            )
            hit(
                "apex.amp.initialize",
                f"apex.amp.initialize(opt_level={opt_level!r})",
                "torch.autocast",
                cls,
                why,
            )
            for m in models if isinstance(models, (list, tuple)) else [models]:
                m.forward = torch.autocast(amp_type)(m.forward)
        else:
            hit("apex.amp.initialize", f"apex.amp.initialize(opt_level={opt_level!r})", "unchanged", MODIFIED)
        return models if optimizers is None else (models, optimizers)

    @contextlib.contextmanager
    def scale_loss(loss: torch.Tensor, optimizers: Any, *a: Any, **k: Any) -> Iterator[torch.Tensor]:
        hit("apex.amp.scale_loss", "apex.amp.scale_loss()", "loss (unscaled)", MODIFIED, "no loss scaling", 3)
        yield loss

    def master_params(optimizer: Any) -> Iterator[Any]:
        for group in optimizer.param_groups:
            yield from group["params"]

    amp.initialize = initialize
    amp.scale_loss = scale_loss
    amp.master_params = master_params
    amp.state_dict = lambda *a, **k: {}
    amp.load_state_dict = lambda *a, **k: None

    def FusedAdam(
        params: Any,
        lr: float = 1e-3,
        bias_correction: bool = True,
        betas: Any = (0.9, 0.999),
        eps: float = 1e-8,
        adam_w_mode: bool = True,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        **kwargs: Any,
    ) -> torch.optim.Optimizer:
        native = torch.optim.AdamW if adam_w_mode else torch.optim.Adam
        hit(
            "apex.optimizers.FusedAdam",
            "FusedAdam()",
            f"torch.optim.{native.__name__}()",
            MODIFIED,
            "unfused",
        )
        return native(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)

    def FusedSGD(params: Any, lr: float = 1e-3, **kwargs: Any) -> torch.optim.Optimizer:
        hit("apex.optimizers.FusedSGD", "FusedSGD()", "torch.optim.SGD()", MODIFIED, "unfused")
        kwargs.pop("wd_after_momentum", None)
        kwargs.pop("materialize_master_grads", None)
        return torch.optim.SGD(params, lr=lr, **kwargs)

    optimizers.FusedAdam = FusedAdam
    optimizers.FusedSGD = FusedSGD

    def FusedLayerNorm(
        normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True, **kwargs: Any
    ) -> torch.nn.Module:
        hit(
            "apex.normalization.FusedLayerNorm",
            "FusedLayerNorm()",
            "torch.nn.LayerNorm()",
            MODIFIED,
            "unfused",
        )
        return torch.nn.LayerNorm(normalized_shape, eps=eps, elementwise_affine=elementwise_affine)

    def FusedRMSNorm(
        normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True, **kwargs: Any
    ) -> torch.nn.Module:
        hit("apex.normalization.FusedRMSNorm", "FusedRMSNorm()", "torch.nn.RMSNorm()", MODIFIED, "unfused")
        return torch.nn.RMSNorm(normalized_shape, eps=eps, elementwise_affine=elementwise_affine)

    normalization.FusedLayerNorm = FusedLayerNorm
    normalization.FusedRMSNorm = FusedRMSNorm

    def DistributedDataParallel(module: torch.nn.Module, *a: Any, **k: Any) -> torch.nn.Module:
        hit(
            "apex.parallel.DistributedDataParallel",
            "apex DDP()",
            "torch DDP()",
            MODIFIED,
            "apex options dropped",
        )
        return torch.nn.parallel.DistributedDataParallel(module)

    def convert_syncbn_model(module: torch.nn.Module, *a: Any, **k: Any) -> torch.nn.Module:
        if s.is_cpu:
            hit("apex.parallel.convert_syncbn_model", "convert_syncbn_model()", "unchanged", MODIFIED, "cpu")
            return module
        hit(
            "apex.parallel.convert_syncbn_model",
            "convert_syncbn_model()",
            "SyncBatchNorm.convert_sync_batchnorm",
        )
        return torch.nn.SyncBatchNorm.convert_sync_batchnorm(module)

    parallel.DistributedDataParallel = DistributedDataParallel
    parallel.convert_syncbn_model = convert_syncbn_model
    apex.amp, apex.optimizers, apex.normalization, apex.parallel = amp, optimizers, normalization, parallel
    return {
        "apex": apex,
        "apex.amp": amp,
        "apex.optimizers": optimizers,
        "apex.normalization": normalization,
        "apex.parallel": parallel,
    }


class NVMLError(Exception):
    """pynvml.NVMLError as the shim raises it: `value` is a code, str() says what is unsupported."""

    def __init__(self, value: int, msg: str = "") -> None:
        super().__init__(msg or f"NVML error {value}")
        self.value = value


def _pynvml(s: Session) -> dict[str, types.ModuleType]:
    hit = s.log.hit
    t = s.target
    mod = types.ModuleType("pynvml", f"torchport: NVML answers for target {t.name}")
    count = 0 if s.is_cpu else int(s.devmod.device_count())

    def handle(i: int) -> Any:
        if not 0 <= i < count:
            raise NVMLError(2, f"pynvml: no device {i}: target {t.name} has {count} device(s) [torchport]")
        return types.SimpleNamespace(index=i)

    def meminfo(h: Any) -> Any:
        free, total = s.devmod.mem_get_info(h.index)
        return types.SimpleNamespace(total=total, free=free, used=total - free)

    answers: dict[str, tuple[Callable[..., Any], str, str]] = {
        "nvmlInit": (lambda *a: None, MODIFIED, "no NVML: nothing to initialise"),
        "nvmlShutdown": (lambda *a: None, MODIFIED, "no NVML"),
        "nvmlDeviceGetCount": (lambda: count, MODIFIED, f"counts {t.name} devices (cpu: 0 GPUs)"),
        "nvmlDeviceGetHandleByIndex": (handle, MODIFIED, f"{t.name} device handle"),
        "nvmlDeviceGetMemoryInfo": (meminfo, MODIFIED, f"{t.device_module}.mem_get_info"),
        "nvmlDeviceGetName": (lambda h: f"{t.title} {h.index}", MODIFIED, ""),
        "nvmlSystemGetDriverVersion": (lambda: f"torchport-{t.name}", MISMATCH, "no NVIDIA driver"),
        "nvmlDeviceGetCudaComputeCapability": (lambda h: (0, 0), MISMATCH, "no CUDA capability"),
        "nvmlDeviceGetUtilizationRates": (
            lambda h: types.SimpleNamespace(gpu=0, memory=0),
            MISMATCH,
            "no utilization counters",
        ),
    }
    for name, (fn, cls, why) in answers.items():
        setattr(mod, name, _logged(hit, f"pynvml.{name}", fn, cls, why))
    mod.NVMLError = NVMLError
    mod.NVML_ERROR_NOT_SUPPORTED = 3

    def __getattr__(name: str) -> Any:
        if name.startswith("nvml"):

            def unsupported(*a: Any, **k: Any) -> Any:
                raise NVMLError(
                    3, f"pynvml.{name} is not supported on target {t.name} (no NVIDIA GPU) [torchport]"
                )

            return unsupported
        raise AttributeError(name)

    mod.__getattr__ = __getattr__  # type: ignore[method-assign]
    return {"pynvml": mod}


def _logged(hit: Any, api: str, fn: Callable[..., Any], cls: str, why: str) -> Callable[..., Any]:
    """The log line shows the call and the answer: `pynvml.nvmlDeviceGetCount() -> 0`."""

    @functools.wraps(fn)
    def w(*a: Any, **k: Any) -> Any:
        out = fn(*a, **k)
        hit(api, (CALL, api, a, k), (VALUE, out), cls, why)
        return out

    return w


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, modules: dict[str, types.ModuleType]) -> None:
        self.modules = modules

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]], target: Optional[types.ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname in self.modules:
            return importlib.util.spec_from_loader(fullname, self, is_package=fullname == "apex")
        if fullname.startswith("apex."):
            raise ModuleNotFoundError(
                f"{fullname}: torchport maps apex.amp/optimizers/normalization/parallel only"
            )
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self.modules[spec.name]

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def install(s: Session, shims: Sequence[str]) -> None:
    modules: dict[str, types.ModuleType] = {}
    if "apex" in shims:
        modules.update(_apex(s))
    if "pynvml" in shims:
        modules.update(_pynvml(s))
    if not modules:
        return
    finder = _Finder(modules)
    sys.meta_path.insert(0, finder)
    before = {name: sys.modules.pop(name) for name in list(modules) if name in sys.modules}

    def undo() -> None:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        for name, m in modules.items():
            if sys.modules.get(name) is m:
                del sys.modules[name]
        sys.modules.update(before)

    s.patcher.undo.append(undo)
