"""Turn the rehearsal device on in this process: register it as the target's device, configure what the
target's lists say about each operator, and make `import torch_npu` / `torch_mlu` / `torch_musa` resolve to
stand-ins.

The facts come from the places check-ops reads them: the op databases (torchport.check_ops.opdb, data/opdb)
judged by check-ops' Classifier, and the per-target table torchport.targets.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from torchport._versions import major_minor
from torchport.rehearse.session import (  # noqa: F401 - shared names, also imported from here
    ENV_CONFIG,
    REHEARSE_TARGETS,
    STANDINS,
    STATUS_NAMES,
    Session,
    ext,
    session,
    start,
)

if TYPE_CHECKING:
    from torchport.targets import Target

# ---- what the target's lists say about one operator (check-ops' Classifier, one source of truth) ----

# The device kernels the rehearsal device itself registers, and the operator whose verdict they carry
# (check-ops' DEVICE_EQUIV maps convolution to convolution_overrideable and friends).
_OWN_KERNELS = {
    "convolution_overrideable": "convolution",
    "convolution_backward_overrideable": "convolution_backward",
}


def _classify_npu_op(name: str) -> tuple[int, str]:
    """torch_npu's own operators (torch.ops.npu): those the rehearsal serves with a reference kernel are the
    vendor's native kernels; the others have no kernel here and refuse when called (counted as refused)."""
    from torchport.rehearse import npu_fused

    if name.split("::", 1)[1].split(".")[0] in npu_fused.SERVED:
        return 0, "torch_npu's own operator, rehearsed with torchport's reference kernel (npu_fused.py)"
    return 2, "torch_npu's own operator, without a kernel under rehearsal"


def _make_classifier(target: str) -> Any:
    import torch

    from torchport.check_ops import classify as cl
    from torchport.check_ops import opdb

    version = major_minor(torch.__version__)
    clf = cl.Classifier(opdb.load(target, version))
    codes = {cl.NATIVE: 0, cl.FALLBACK: 1, cl.UNKNOWN: 2, cl.DTYPE: 3}
    # out= overload -> the functional and in-place overloads delegating to it (aten.json structured_delegate).
    # The device reaches the out= overload through torch's generic kernel of the functional one when it has
    # no kernel of its own; a vendor that lists the functional one runs that instead.
    family: dict[str, list[str]] = {}
    for fn, out in clf.db.delegates.items():
        family.setdefault(out, []).append(fn)

    def classify(name: str) -> tuple[int, str]:
        if name.startswith("npu::"):
            return _classify_npu_op(name)
        for fn in family.get(name, ()):
            if clf.db.is_native(fn):
                return 0, f"reached through {fn}, which is listed ({clf.db.source_of(fn).rsplit('/', 1)[-1]})"
        op = "aten::" + _OWN_KERNELS.get(name, name)
        try:
            units = clf.classify_op(op, [])
        except Exception as e:  # a classifier failure must not break the user's run
            return 2, f"could not classify: {e}"
        statuses = [u[1] for u in units]
        for st in (cl.FALLBACK, cl.UNKNOWN, cl.NATIVE):
            if st in statuses:
                reason = next(u[2] for u in units if u[1] == st)
                return codes[st], reason
        return 2, "no verdict"

    return classify


def _site_callback(sess: Session) -> Any:
    from torchport._frames import user_site

    def site() -> str:
        s = user_site(sys._getframe(0).f_back)
        if s is not None:
            return f"{s[0]}:{s[1]}"
        return sess.backward_site or "<no Python frame>"

    return site


def _warn_callback(sess: Session) -> Any:
    from torchport._frames import user_site

    def warn(msg: str) -> None:
        s = user_site(sys._getframe(0).f_back)
        if s is None and sess.backward_site:
            path, _, line = sess.backward_site.split(" ")[0].rpartition(":")
            s = (path, int(line))
        if s is not None:
            warnings.warn_explicit(msg, UserWarning, s[0], s[1])
        else:
            warnings.warn(msg, UserWarning, stacklevel=2)

    return warn


def _patch_backward(sess: Session) -> None:
    """Backward ops run on the autograd engine's thread, which has no Python frames: remember where
    backward() was called, as their call site."""
    import torch

    from torchport._frames import user_site

    original = torch.autograd.backward

    def backward(*args: Any, **kwargs: Any) -> Any:
        s = user_site(sys._getframe(0).f_back)
        if s is not None:
            sess.backward_site = f"{s[0]}:{s[1]} (backward)"
        return original(*args, **kwargs)

    backward.__wrapped__ = original  # type: ignore[attr-defined]
    torch.autograd.backward = backward  # type: ignore[assignment]


# ---- stand-in vendor packages, under rehearsal only ----


class StandinFinder(importlib.abc.MetaPathFinder):
    """Resolves the vendor package of the rehearsed target (and only it) to its stand-in, when no real
    package is installed. Appended to sys.meta_path, so a real vendor package is found first."""

    def __init__(self, package: str) -> None:
        self.package = package

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None, target: Any = None) -> Any:
        top = fullname.split(".")[0]
        if top != self.package:
            return None
        parts = fullname.split(".")
        base = STANDINS.joinpath(*parts)
        if base.is_dir() and (base / "__init__.py").is_file():
            return importlib.util.spec_from_file_location(
                fullname, base / "__init__.py", submodule_search_locations=[str(base)]
            )
        if base.with_suffix(".py").is_file():
            return importlib.util.spec_from_file_location(fullname, base.with_suffix(".py"))
        return None


# torch.compile backends that generate device code: inductor has no code generator for a PrivateUse1
# device unless its vendor registers one (torch_npu, torch_mlu and torch_musa each ship their own), and
# none of those exists here. Dynamo and AOTAutograd still run, with the graph executed by the rehearsal
# device's eager kernels ("aot_eager"), so a compiled model gets through the same graph capture.
_CODEGEN_BACKENDS = ("inductor",)
COMPILE_NOTE = (
    "torch.compile(backend={backend!r}) runs with backend='aot_eager' under rehearsal: the graph is captured "
    "by Dynamo and AOTAutograd as on the device, but the {target} vendor's compiler backend is not rehearsed"
)


def _patch_compile(sess: Session) -> None:
    import torch

    orig = torch.compile

    @functools.wraps(orig)
    def compile(*args: Any, **kwargs: Any) -> Any:
        backend = kwargs.get("backend", "inductor")
        if isinstance(backend, str) and backend in _CODEGEN_BACKENDS:
            kwargs["backend"] = "aot_eager"
            for key in ("mode", "options"):  # inductor's own settings mean nothing to aot_eager
                kwargs.pop(key, None)
            note = COMPILE_NOTE.format(backend=backend, target=sess.target)
            if note not in sess.notes:
                sess.notes.append(note)
                print(f"torchport rehearse: {note}", file=sys.stderr)
        return orig(*args, **kwargs)

    torch.compile = compile


def _print_on_host(target: str) -> None:
    """torch formats a tensor with float64 arithmetic on the tensor's own device (torch/_tensor_str.py,
    _Formatter). A vendor without float64 formats a CPU copy instead; so does the rehearsal, so that
    `print(x)` is not reported as a float64 op the real device never runs."""
    import torch._tensor_str as ts

    original = ts._tensor_str

    def _tensor_str(self: Any, indent: int) -> str:
        if self.device.type == target:
            self = self.cpu()
        return original(self, indent)

    ts._tensor_str = _tensor_str


def install_import_hook(target: str) -> None:
    from torchport.targets import get_target

    pkg = get_target(target).vendor_package or ""
    if not any(isinstance(f, StandinFinder) for f in sys.meta_path):
        sys.meta_path.append(StandinFinder(pkg))


# ---- spawned children (torch.multiprocessing.spawn, multiprocessing 'spawn') ----


def _patch_spawn() -> None:
    """A child started with the 'spawn' method is a fresh interpreter: make it turn the rehearsal on
    (from ENV_CONFIG) before it imports the main script."""
    import multiprocessing.spawn as mps

    original = mps.get_command_line
    root = str(Path(__file__).resolve().parent.parent.parent)

    def get_command_line(**kwds: Any) -> list[str]:
        cmd = original(**kwds)
        i = cmd.index("-c") + 1
        prog = cmd[i].replace(
            "from multiprocessing.spawn import spawn_main", "from torchport.rehearse._child import spawn_main"
        )
        if prog == cmd[i]:
            prog = "import torchport.rehearse._child; " + prog
        cmd[i] = f"import sys; sys.path.insert(0, {root!r}); " + prog
        return cmd

    mps.get_command_line = get_command_line  # type: ignore[assignment]


# ---- the distributed backend (hccl / cncl / mccl on gloo) ----


def _register_collectives(target: str) -> None:
    import torch.distributed as dist

    if not dist.is_available():
        return
    from torchport.rehearse.collectives import make_creator
    from torchport.targets import get_target

    name = get_target(target).backend
    if name in dist.Backend.backend_list:
        return
    dist.Backend.register_backend(name, make_creator(name), devices=[target])


def parse_size(text: str) -> int:
    """'64GiB', '32GB', '512MiB', '1024' (bytes) -> bytes. Raises ValueError."""
    from torchport.rehearse.presets import PRESETS

    t = text.strip()
    if t.lower() in PRESETS:
        return PRESETS[t.lower()][0]
    units = {
        "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
        "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
        "k": 2**10, "m": 2**20, "g": 2**30, "b": 1, "": 1,
    }  # fmt: skip
    num = t.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ").strip()
    unit = t[len(num) :].strip().lower()
    if unit not in units or not num:
        raise ValueError(f"not a size: {text!r} (use e.g. 64GiB, 32GB, 512MiB or a preset)")
    value = float(num)
    if value <= 0:
        raise ValueError(f"not a size: {text!r} (must be positive)")
    return int(value * units[unit])


def _vendor_strict(tgt: Target) -> bool:
    """The target falls back to the CPU by default, and its variable that makes fallbacks errors is set."""
    return (
        tgt.fallback_default == "cpu"
        and tgt.fallback_env is not None
        and os.environ.get(tgt.fallback_env) == tgt.fallback_env_value
    )


def activate(
    target: str,
    devices: int = 1,
    memory: int = -1,
    strict: bool = False,
    report: Optional[str] = None,
    vendor: Optional[str] = None,
) -> Session:
    """Registers the rehearsal device as `target` in this process. Once per process. For npu, `vendor` chooses
    the torch_npu (vendor_npu.locate: a path, "auto" or "off"; None: TORCHPORT_VENDOR_TORCH_NPU, else
    auto)."""
    current = session()
    if current is not None:
        return current
    pkg = None
    if target == "npu":
        from torchport.rehearse import vendor_npu

        pkg = vendor_npu.locate(vendor)  # raises vendor_npu.VendorError
        # before torch is imported: its backend autoload would import the vendor's package (with its own core)
        if pkg is not None:
            os.environ[vendor_npu.AUTOLOAD] = "0"
    from torchport.check_ops import opdb
    from torchport.rehearse import _build
    from torchport.targets import get_target

    tgt = get_target(target)
    if target not in REHEARSE_TARGETS:
        raise ValueError(f"unknown rehearsal target {target!r}; choose one of: {', '.join(REHEARSE_TARGETS)}")
    # The vendor's own switch that makes every CPU fallback an error (data/targets.json "fallback") means
    # --strict too.
    if _vendor_strict(tgt):
        strict = True
    sess = Session(target=target, devices=devices, memory=memory, strict=strict, report=report)
    sess.vendor_package = pkg.describe() if pkg is not None else ""
    mod = _build.load()
    sess.ext = mod
    import torch

    version = major_minor(torch.__version__)
    db = opdb.load(target, version)
    refused = [] if tgt.float64 else ["Double", "ComplexDouble"]
    mod.configure(
        target,
        target.upper(),
        devices,
        memory,
        strict,
        db.fallback_default,
        db.fallback_env,
        refused,
        _make_classifier(target),
        _site_callback(sess),
        _warn_callback(sess),
    )
    sess.listed_kernels = sorted(mod.register_listed_kernels())
    if tgt.cpu_shallow_copy:  # data/targets.json: the vendor makes CPU and device tensors compatible
        mod.register_cpu_shallow_copy()
    # The vendor's own package does these itself at import (its _tensor_str, its FlexAttention patch).
    if (
        tgt.print_on_host and pkg is None
    ):  # data/targets.json: the vendor prints a device tensor from a CPU copy
        _print_on_host(target)
    if (
        tgt.flex_attention and pkg is None
    ):  # data/targets.json: the vendor lets FlexAttention run on its device
        from torchport.rehearse.flex_attention import accept_on_device

        accept_on_device(target)
    torch.utils.rename_privateuse1_backend(target)
    start(sess)
    if pkg is not None:
        _activate_vendor(sess, pkg)
        return sess
    from torchport.rehearse import devmod

    module = devmod.build(target)
    torch._register_device_module(target, module)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
    )
    _patch_backward(sess)
    _patch_compile(sess)
    _register_collectives(target)
    install_import_hook(target)
    _patch_spawn()
    _save_config(sess, "off" if target == "npu" else None)
    return sess


def _save_config(sess: Session, vendor: Optional[str]) -> None:
    os.environ[ENV_CONFIG] = json.dumps(
        {
            "target": sess.target,
            "devices": sess.devices,
            "memory": sess.memory,
            "strict": sess.strict,
            "report": sess.report,
            "vendor": vendor,
        }
    )


def _activate_vendor(sess: Session, pkg: Any) -> None:
    """The rest of activate() with the vendor's torch_npu: its import registers the device module, the tensor
    methods and the hccl backend (through torchport's replacement of its compiled core, npu_core), so the
    rehearsal registers none of its own. The package is imported now, as torch's backend autoload does on a
    machine where it is installed."""
    from torchport.rehearse import npu_fused, vendor_npu

    defined, failed = vendor_npu.install(pkg)
    sess.notes.append(
        f"torch_npu: {pkg.describe()}; its compiled core (torch_npu._C) is torchport's "
        f"(data/vendor/torch_npu_core.json); {defined} torch.ops.npu schemas defined, "
        f"{len(npu_fused.SERVED)} of them served by reference kernels (npu_fused.py), the others refuse"
        + (f", {len(failed)} refused by this torch" if failed else "")
    )
    _patch_backward(sess)
    _patch_compile(sess)
    _patch_spawn()
    _save_config(sess, str(pkg.root))
    import torch_npu  # the vendor's

    # The vendor initialises the device on first use (torch_npu.npu._lazy_init) and defers seeding until
    # then. The rehearsal device's generators draw from the host's stream, so a seed applied late would
    # re-seed that stream midway and the run would no longer draw the --target cpu numbers: initialise now.
    torch_npu.npu._lazy_init()


def activate_from_env() -> Optional[Session]:
    raw = os.environ.get(ENV_CONFIG)
    if not raw:
        return None
    cfg = json.loads(raw)
    return activate(cfg["target"], cfg["devices"], cfg["memory"], cfg["strict"], None, cfg.get("vendor"))
