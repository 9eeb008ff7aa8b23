"""Build torchport.runtime._speedups (src/speedups/_speedups.c) from a checkout, without CMake; load it.

The wheel and `pip install .` build it with CMake (CMakeLists.txt, TORCHPORT_SPEEDUPS); a source checkout run
with PYTHONPATH=python has no extension and runs the pure-Python fallback. The tests
(tests/python/test_runtime_speedups.py) and bench/runtime_bench.py use this to run the C path of this very
tree: the C compiler (`cc`) and the running Python's headers, Python's limited API as in the wheel.

usage: python tools/speedups.py OUT_DIR   (prints the path of the built module)
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

SOURCE = Path(__file__).resolve().parent.parent / "src" / "speedups" / "_speedups.c"


def build(out_dir: Path) -> Path:
    """Compile the extension into out_dir; raises RuntimeError with the compiler's output on failure."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("no C compiler (cc, gcc) on PATH: apt-get install gcc")
    out = Path(out_dir) / "_speedups.abi3.so"
    include = sysconfig.get_paths()["include"]
    cmd = [
        cc,
        "-O2",
        "-fPIC",
        "-shared",
        "-Wall",
        "-Wextra",
        "-Werror",
        f"-I{include}",
        str(SOURCE),
        "-o",
        str(out),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return out


def load(path: Path) -> ModuleType:
    """The built module, imported under its package name (not added to sys.modules)."""
    spec = importlib.util.spec_from_file_location("torchport.runtime._speedups", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(build(Path(sys.argv[1])))
