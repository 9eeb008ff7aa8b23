"""Build (once) and load the rehearsal device's C++ extension against the installed torch.

torch's C++ ABI changes with every release, so the extension is compiled on this machine with
torch.utils.cpp_extension, on first use, and cached under ~/.cache/torchport/rehearse/<key>, where the key
covers the torch version, the compiler and the sources. Our own C++ builds with -Wall -Wextra -Werror
(torch's headers are system headers there).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from types import ModuleType
from typing import Optional

CSRC = Path(__file__).resolve().parent / "csrc"
SOURCES = ("allocator.cc", "device.cc", "fallback.cc", "module.cc", "rnn.cc")
FLAGS = ["-O2", "-std=c++20", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"]

_loaded: Optional[ModuleType] = None


class BuildError(Exception):
    """The extension could not be built; the message is one line that says what to do."""


def _compiler() -> str:
    return os.environ.get("CXX", "c++")


def _compiler_id(cxx: str) -> str:
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.splitlines()[0] if out.stdout else ""


def cache_root() -> Path:
    base = os.environ.get("TORCHPORT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "torchport"
    )
    return Path(base) / "rehearse"


def build_key() -> str:
    import torch

    h = hashlib.sha256()
    h.update(torch.__version__.encode())
    h.update(_compiler_id(_compiler()).encode())
    h.update(sys.version.encode())
    h.update(" ".join(FLAGS).encode())
    for name in (*SOURCES, "rehearse.h"):
        h.update((CSRC / name).read_bytes())
    return f"torch{torch.__version__.split('+')[0]}-{h.hexdigest()[:16]}"


def _check_toolchain() -> None:
    cxx = _compiler()
    if shutil.which(cxx) is None:
        raise BuildError(
            f"no C++ compiler ({cxx!r}) to build the rehearsal device: install the Debian package g++ "
            "(apt-get install -y g++)"
        )
    if shutil.which("ninja") is None:
        raise BuildError(
            "ninja is needed to build the rehearsal device: install the Debian package ninja-build "
            "(apt-get install -y ninja-build) or `pip install ninja`"
        )
    inc = sysconfig.get_paths().get("include") or ""
    if not (Path(inc) / "Python.h").is_file():
        raise BuildError(
            f"Python.h not found in {inc}: install the Debian package python3-dev "
            "(apt-get install -y python3-dev)"
        )


def load(verbose: bool = False, quiet: bool = False) -> ModuleType:
    """The extension module, built first if this torch + compiler + source has no cached build."""
    global _loaded
    if _loaded is not None:
        return _loaded
    dev_dir = os.environ.get("TORCHPORT_REHEARSE_BUILD_DIR")  # developers: one incremental build directory
    key = "dev" if dev_dir else build_key()
    out = Path(dev_dir) if dev_dir else cache_root() / key
    name = "torchport_rehearse_" + key.replace(".", "_").replace("-", "_")
    so = out / f"{name}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"
    built = next((p for p in (out / f"{name}.so", so) if p.is_file()), None)
    if built is not None and not dev_dir:
        # cached: load the module directly (cpp_extension.load would run the compiler and ninja to check)
        import importlib.machinery
        import importlib.util

        import torch  # noqa: F401  (the extension links against torch's libraries)

        loader = importlib.machinery.ExtensionFileLoader(name, str(built))
        spec = importlib.util.spec_from_file_location(name, str(built), loader=loader)
        assert spec is not None
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        _loaded = mod
        return mod
    fresh = built is None
    if fresh:
        _check_toolchain()
        if not quiet:
            print(
                f"torchport rehearse: building the rehearsal device for torch (once; cached in {out})...",
                file=sys.stderr,
                flush=True,
            )
    out.mkdir(parents=True, exist_ok=True)
    from torch.utils import cpp_extension

    t0 = time.perf_counter()
    try:
        mod = cpp_extension.load(
            name=name,
            sources=[str(CSRC / s) for s in SOURCES],
            extra_cflags=FLAGS,
            build_directory=str(out),
            verbose=verbose,
        )
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        log = str(e).strip().splitlines()
        first_error = next((ln for ln in log if "error" in ln.lower()), log[-1] if log else "")
        raise BuildError(
            f"building the rehearsal device failed ({first_error.strip()}); rerun with "
            "`torchport rehearse --build --verbose` for the compiler output"
        ) from None
    if fresh and not quiet:
        print(f"torchport rehearse: built in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    _loaded = mod
    return mod
