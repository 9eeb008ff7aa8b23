"""`torchport migrate ... --object-storage | --modelarts [--main FILE]`.

The C++ core migrates the project as usual (every other option is passed through); then
torchport.cloud.generate adds the path manager, its config and the activating import line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

from torchport._core import CoreNotFoundError, core_binary
from torchport.cloud.generate import LAYOUTS, StorageSetupError, add_storage_support

# Options of the core's `migrate` that take a value (so that their value is not the INPUT).
_VALUE_OPTIONS = {
    "-t",
    "--target",
    "-v",
    "--torch-version",
    "-j",
    "--jobs",
    "-r",
    "--rules",
    "-o",
    "--output",
    "--backup",
    "--config",
}
STORAGE_FLAGS = ("--object-storage", "--modelarts")


def wants_storage(argv: Sequence[str]) -> bool:
    return any(a in STORAGE_FLAGS for a in argv)


def _split(argv: Sequence[str]) -> tuple[list[str], str, Optional[str]]:
    """Removes the storage options; returns (core argv, platform, --main)."""
    core: list[str] = []
    platform = "object-storage"
    main: Optional[str] = None
    it = iter(argv)
    for a in it:
        if a == "--modelarts":
            platform = "modelarts"
        elif a == "--object-storage":
            continue
        elif a == "--main":
            main = next(it, None)
            if main is None:
                raise StorageSetupError("--main needs a file name")
        elif a.startswith("--main="):
            main = a.split("=", 1)[1]
        else:
            core.append(a)
    return core, platform, main


def _result_dir(core: list[str]) -> tuple[Optional[Path], Optional[Path]]:
    """The migrated project and its reports directory, from the core's options."""
    values: dict[str, str] = {}
    positional: list[str] = []
    inplace = False
    i = 0
    while i < len(core):
        a = core[i]
        if a in _VALUE_OPTIONS and i + 1 < len(core):
            values[a] = core[i + 1]
            i += 2
            continue
        if a.startswith("--") and "=" in a:
            k, v = a.split("=", 1)
            values[k] = v
        elif a == "--inplace":
            inplace = True
        elif not a.startswith("-"):
            positional.append(a)
        i += 1
    if len(positional) < 2:  # "migrate" and INPUT
        return None, None
    source = Path(positional[1])
    out = values.get("-o") or values.get("--output")
    target = values.get("-t") or values.get("--target")
    if inplace:
        project = source if source.is_dir() else source.parent
        return project, Path(out) if out else None
    if not out or not target:
        return None, None
    name = source.name if source.is_dir() else source.stem
    project = Path(out) / f"{name}_{target}"
    return project, project / "torchport-report"


def main(argv: Sequence[str]) -> int:
    """`argv` starts with "migrate"."""
    try:
        core, platform, entry = _split(argv)
    except StorageSetupError as e:
        print(f"torchport migrate: error: {e}", file=sys.stderr)
        return 2
    if core[0] != "migrate":
        print(f"torchport {core[0]}: error: {' / '.join(STORAGE_FLAGS)} go with migrate", file=sys.stderr)
        return 2
    try:
        binary = core_binary()
    except CoreNotFoundError as e:
        print(f"torchport: error: {e}", file=sys.stderr)
        return 2
    project, reports = _result_dir(core)
    # A config the user filled in survives a re-migration (--force rebuilds the result).
    kept: dict[Path, bytes] = {}
    if project is not None and project.is_dir():
        package = LAYOUTS[platform].package
        kept = {
            p: p.read_bytes() for p in project.rglob("path_mapping_config.py") if p.parent.name == package
        }
    sys.stdout.flush()
    rc = subprocess.run([binary, *core], check=False).returncode
    for path, data in kept.items():
        if path.parent.parent.is_dir() and not path.exists():
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(data)
    if rc not in (0, 1) or project is None or not project.is_dir():
        if rc == 0:
            print(
                f"torchport migrate: error: --{platform}: cannot find the migrated project", file=sys.stderr
            )
            return 2
        return rc
    try:
        section = add_storage_support(project, platform, entry, reports)
    except (StorageSetupError, OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        print(f"torchport migrate: error: --{platform}: {e}", file=sys.stderr)
        return 2
    print(
        f"--{platform}: {section['package']}/ added, import in {section['entry']}"
        + (f" line {section['import_line']}" if section["import_line"] else " (already there)")
        + f"; fill in {section['config']} ({len(section['suggestions'])} local path(s) suggested)"
    )
    for s in section["spawn"]:
        print(
            f"{s['file']}:{s['line']}: warning: torch.multiprocessing.spawn is not supported on the platform"
        )
    return rc
