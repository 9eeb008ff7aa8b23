#!/usr/bin/env python3
"""How far the vendor's own torch_npu gets on this machine without CANN (issue 31 §2, a measurement).

`import torch_npu` from PyPI fails here: its compiled core (torch_npu/_C*.so, lib/libtorch_npu.so) links
against CANN (libascendcl.so, libhccl.so, ...). This probe runs the vendor's *Python* layer on the installed
torch with the compiled core replaced, to measure what a rehearsal of the real package needs:

1. the Python files of the pinned 2.13.0 wheel (data/vendor/torch_npu_wheels.json) are extracted to a
   temporary directory (no dist-info, so torch's backend autoload does not see it; of the shared libraries
   only lib/libop_plugin_atb.so, which the vendor loads inside `except OSError` and fails to load here);
2. `torch_npu._C` is a generated module, installed by a meta path finder before the import: its surface is
   the `torch_npu._C...` names the vendor's Python uses (tools/check_vendor_npu.py, Wheel.cext_names()).
   Each name is a stub. During the import a call of a stub returns another stub and is recorded; after the
   import a call raises NotImplementedError naming the vendor function. A name the Python never uses is an
   AttributeError. The `_<child>_init` functions create the child modules (`_profiler`, ...);
3. the operator schemas of the wheel's npu_native_functions_by_codegen.yaml (`custom:` section) are defined
   in an `npu` torch.library first, because the Python layer registers fake kernels for them.

It prints one JSON report: whether `import torch_npu` completed, the _C functions the import called, and a few
calls afterwards (pure-Python ones run the vendor's code; the others name the _C function they reach).

Usage: tools/probe_vendor_npu_import.py [--wheels DIR] [--offline]
It never installs anything, and runs the vendor's import in a child process.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_vendor_npu as cvn  # noqa: E402

CHILD = r"""
import importlib.abc, importlib.machinery, json, os, re, sys, traceback, types
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
spec = json.loads(sys.argv[1])
NAMES = set(spec["names"])
CALLED = []
STATE = {"importing": True}


class _StubMeta(type):
    def __getattr__(cls, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        dotted = f"{cls._dotted}.{attr}"
        if dotted in NAMES or cls._dotted in NAMES:
            return _stub(dotted)
        raise AttributeError(f"{dotted}: not used by the vendor's Python, so not in the stand-in")

    def __call__(cls, *args, **kwargs):
        if STATE["importing"]:
            CALLED.append(cls._dotted)
            return _stub(cls._dotted + "()")
        raise NotImplementedError(f"{cls._dotted}: torch_npu's compiled core (needs CANN) is not emulated")

    def __iter__(cls):
        return iter(())

    def __bool__(cls):
        return True

    def __int__(cls):
        return 0

    def __index__(cls):
        return 0

    def __or__(cls, other):
        return cls

    __ror__ = __or__


_CACHE = {}


def _stub(dotted):
    if dotted not in _CACHE:
        _CACHE[dotted] = _StubMeta(dotted.rsplit(".", 1)[-1], (), {"_dotted": dotted})
    return _CACHE[dotted]


class _CModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        dotted = f"{self.__name__}.{attr}"
        m = re.fullmatch(r"_(\w+)_init", attr)
        if m:  # _profiler_init, _c10d_npu_init, ...: create the child module
            child = {"c10d_npu": "_distributed_c10d"}.get(m.group(1), "_" + m.group(1))

            def init(child=child):
                CALLED.append(dotted)
                mod = _CModule(f"{self.__name__}.{child}")
                setattr(self, child, mod)
                sys.modules[mod.__name__] = mod

            return init
        if dotted in NAMES:
            return _stub(dotted)
        raise AttributeError(f"{dotted}: not used by the vendor's Python, so not in the stand-in")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name == "torch_npu._C" or name.startswith("torch_npu._C."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        if name.startswith("torch_npu.lib") or name.endswith(".so"):
            return None
        return None

    def create_module(self, spec):
        return _CModule(spec.name)

    def exec_module(self, module):
        module.__path__ = []


sys.meta_path.insert(0, _Finder())
sys.path.insert(0, spec["site"])

import torch

lib = torch.library.Library("npu", "DEF")
defined, refused = 0, []
for schema in spec["schemas"]:
    try:
        lib.define(schema)
        defined += 1
    except Exception as e:  # a schema torch 2.13 does not parse
        refused.append(f"{schema.split('(')[0]}: {type(e).__name__}: {str(e)[:120]}")

report = {"schemas_defined": defined, "schemas_refused": refused}
try:
    import torch_npu
    report["import"] = "ok"
except BaseException as e:
    report["import"] = f"{type(e).__name__}: {str(e)[:300]}"
    report["traceback"] = traceback.format_exc().splitlines()[-12:]
STATE["importing"] = False
report["called_during_import"] = sorted(set(CALLED))

calls = {}
if report["import"] == "ok":
    import warnings
    warnings.simplefilter("ignore")
    probes = {
        "torch_npu.npu.get_device_capability()": lambda: torch_npu.npu.get_device_capability(),
        "torch_npu.npu.matmul.allow_tf32 = True; read back": lambda: (
            setattr(torch_npu.npu.matmul, "allow_tf32", True), torch_npu.npu.matmul.allow_tf32)[1],
        "torch_npu.npu.is_available()": lambda: torch_npu.npu.is_available(),
        "torch_npu.npu.device_count()": lambda: torch_npu.npu.device_count(),
        "torch.zeros(2, device='npu')": lambda: torch.zeros(2, device="npu"),
        "torch_npu.npu.default_generators": lambda: torch_npu.npu.default_generators,
        "torch_npu.profiler.ProfilerActivity.NPU": lambda: torch_npu.profiler.ProfilerActivity.NPU,
    }
    for label, fn in probes.items():
        try:
            calls[label] = f"returns {fn()!r}"[:200]
        except BaseException as e:
            calls[label] = f"{type(e).__name__}: {str(e)[:200]}"
report["calls"] = calls
print(json.dumps(report))
"""


def custom_schemas(yaml_text: str) -> list[str]:
    """The `func:` schemas of the codegen yaml's `custom:` section (the NPU-only operators)."""
    import yaml

    doc = yaml.safe_load(yaml_text) or {}
    return [item["func"] for item in doc.get("custom", []) if isinstance(item, dict) and "func" in item]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wheels", type=Path, default=cvn.ROOT / "build/torch_npu_wheels")
    ap.add_argument("--offline", action="store_true")
    args = ap.parse_args(argv)
    pin = cvn.pins()[-1]
    path = cvn.fetch(pin, args.wheels, args.offline)
    wheel = cvn.Wheel.from_file(path, pin["version"])
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(path) as zf:
        for n in zf.namelist():
            if n.startswith("torch_npu/") and n.endswith((".py", ".json", ".yaml")):
                zf.extract(n, tmp)
            elif n == "torch_npu/lib/libop_plugin_atb.so":
                # present, so op_plugin's torch.ops.load_library tries it and meets the vendor's own
                # except OSError (its dependencies, CANN's NNAL libatb.so, are missing)
                zf.extract(n, tmp)
        spec = {
            "site": tmp,
            "names": sorted(wheel.cext_names()),
            "schemas": custom_schemas(wheel.extra.get(cvn.CODEGEN_YAML, "")),
        }
        p = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(spec)], capture_output=True, text=True, timeout=600
        )
    lines = p.stdout.strip().splitlines()
    if p.returncode != 0 or not lines:
        print(p.stderr[-3000:], file=sys.stderr)
        return 1
    report = json.loads(lines[-1])
    report = {
        "wheel": pin["version"],
        "c_names": len(spec["names"]),
        "schemas": len(spec["schemas"]),
        **report,
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
