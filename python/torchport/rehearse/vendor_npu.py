"""The vendor's own torch_npu under `torchport rehearse --target npu` (issue 31 §2).

When the vendor's package is found (`--vendor-torch-npu PATH`, TORCHPORT_VENDOR_TORCH_NPU, or a torch_npu
importable from sys.path), the rehearsal runs *its* Python layer on the rehearsal device: `import torch_npu`
loads the vendor's files, and only its compiled core, which needs Ascend's CANN, is replaced by
torchport.rehearse.npu_core (`torch_npu._C` and its children), installed by a meta path finder before the
import. Otherwise the rehearsal keeps torchport's stand-in (standins/torch_npu).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

ENV = "TORCHPORT_VENDOR_TORCH_NPU"  # PATH (the directory holding torch_npu/), "auto" (default) or "off"
# torch's backend autoload imports every installed `torch.backends` entry point (torch_npu has one) when
# torch is imported; the rehearsal imports the vendor's package itself, after the device is set up.
AUTOLOAD = "TORCH_DEVICE_BACKEND_AUTOLOAD"
CODEGEN_YAML = "csrc/aten/npu_native_functions_by_codegen.yaml"
MARKER = "_init/core/module_loader.py"  # the vendor's import sequence: what tells its package from ours


class VendorError(Exception):
    """The chosen vendor package cannot be used (one line, for the user)."""


@dataclass(frozen=True)
class VendorPackage:
    root: Path  # the sys.path entry that holds torch_npu/
    version: str

    @property
    def package(self) -> Path:
        return self.root / "torch_npu"

    def describe(self) -> str:
        return f"the vendor's torch_npu {self.version} from {self.package}"


def _version(pkg: Path) -> str:
    text = (pkg / "version.py").read_text(encoding="utf-8") if (pkg / "version.py").is_file() else ""
    m = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    return m.group(1) if m else "unknown"


def installed_version(root: Path) -> Optional[str]:
    """The version of the torch_npu installed in `root` (a --target directory), None when there is none."""
    pkg = root / "torch_npu"
    return _version(pkg) if (pkg / "__init__.py").is_file() else None


def _at(root: Path, why: str) -> VendorPackage:
    pkg = root / "torch_npu"
    if not (pkg / "__init__.py").is_file():
        raise VendorError(f"{why}: no torch_npu package in {root}")
    if not (pkg / MARKER).is_file():
        raise VendorError(f"{why}: {pkg} is not the vendor's torch_npu (it has no {MARKER})")
    return VendorPackage(root.resolve(), _version(pkg))


def locate(choice: Optional[str] = None) -> Optional[VendorPackage]:
    """The vendor package to rehearse with, or None for the stand-in. `choice` (the option) wins over the
    environment; "off" means the stand-in, "auto" a torch_npu found on sys.path, anything else a path: the
    directory holding torch_npu/ (as `pip install --target` makes it) or the torch_npu directory itself."""
    value = choice or os.environ.get(ENV) or "auto"
    if value == "off":
        return None
    if value == "auto":
        spec = importlib.machinery.PathFinder.find_spec("torch_npu")
        if spec is None or not spec.submodule_search_locations:
            return None
        pkg = Path(list(spec.submodule_search_locations)[0])
        if not (pkg / MARKER).is_file():
            return None
        return _at(pkg.parent, "torch_npu on sys.path")
    path = Path(value).expanduser()
    if path.name == "torch_npu" and (path / "__init__.py").is_file():
        path = path.parent
    if not path.is_dir():
        raise VendorError(f"--vendor-torch-npu {value}: no such directory")
    return _at(path, f"--vendor-torch-npu {value}")


def custom_schemas(yaml_text: str) -> list[str]:
    """The `func:` schemas of the codegen yaml's `custom:` section: torch_npu's own operators, which its
    Python layer registers fake kernels for at import."""
    out: list[str] = []
    section = ""
    for line in yaml_text.splitlines():
        m = re.match(r"^(\w+):\s*$", line)
        if m:
            section = m.group(1)
            continue
        if section != "custom":
            continue
        m = re.match(r"^\s*-?\s*func:\s*(.+?)\s*$", line)
        if m:
            out.append(m.group(1).strip("'\""))
    return out


_LIBRARY: list[Any] = []  # keeps the npu library alive


def define_custom_ops(pkg: VendorPackage) -> tuple[int, list[str]]:
    """Defines torch_npu's custom operators (their schemas only) in an `npu` torch.library, as the compiled
    core does. Calling one on the rehearsal device raises: no kernel is registered for it."""
    import torch

    path = pkg.package / CODEGEN_YAML
    if not path.is_file():
        raise VendorError(f"{path}: missing, so torch_npu's operator schemas are unknown")
    lib = torch.library.Library("npu", "DEF")
    _LIBRARY.append(lib)
    defined, failed = 0, []
    for schema in custom_schemas(path.read_text(encoding="utf-8")):
        try:
            lib.define(schema)
            defined += 1
        except Exception as e:  # a schema this torch does not parse: the operator stays undefined
            failed.append(f"{schema.split('(')[0]}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
    return defined, failed


def serve_fused() -> list[str]:
    """The reference kernels of the common fused operators and of the optimizers' storage operators
    (npu_fused.py) for the schemas the wheel defined; the other operators keep no kernel and refuse."""
    from torchport.rehearse import npu_fused

    return npu_fused.serve(define=False)


class VendorFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """First on sys.meta_path under rehearsal with the vendor's package: `torch_npu` from the vendor's
    directory, `torch_npu._C` (a package) from torchport.rehearse.npu_core. Its children are created by `_C`'s
    `_<child>_init` functions, as the vendor's module_loader asks."""

    def __init__(self, pkg: VendorPackage) -> None:
        self.pkg = pkg

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None, target: Any = None) -> Any:
        if fullname == "torch_npu._C":
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        if fullname.startswith("torch_npu._C."):
            return None  # created by _C's init functions, registered in sys.modules
        if fullname == "torch_npu":
            return importlib.machinery.PathFinder.find_spec(fullname, [str(self.pkg.root)])
        return None

    def create_module(self, spec: Any) -> Any:
        from torchport.rehearse import npu_core

        return npu_core.make_core()

    def exec_module(self, module: Any) -> None:
        return None


def install(pkg: VendorPackage) -> tuple[int, list[str]]:
    """Prepares this process for `import torch_npu` to load the vendor's package on the rehearsal device."""
    os.environ[AUTOLOAD] = "0"
    os.environ[ENV] = str(pkg.root)  # spawned ranks and torchrun's use the same package
    defined = define_custom_ops(pkg)
    serve_fused()
    if not any(isinstance(f, VendorFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, VendorFinder(pkg))
    return defined
