"""`torchport migrate ... --object-storage | --modelarts [--main FILE]`.

torchport.static_cli strips these options (`split`), lets the C++ core migrate the project as
usual, then calls `finish`, which adds the path manager, its config and the activating import line
(torchport.cloud.generate). A config the user already filled in survives a re-migration.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional, Sequence

from torchport.cloud import STORAGE_FLAGS, wants_storage  # noqa: F401 - re-exported: the flags live in cloud/__init__
from torchport.cloud.generate import LAYOUTS, StorageSetupError, add_storage_support


def split(argv: Sequence[str]) -> tuple[list[str], str, Optional[str]]:
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
    if main is not None and "--distributed" in core:
        core += ["--main", main]  # migrate --distributed converts that script too
    return core, platform, main


def project_of(reports: Path, inplace_input: Optional[str]) -> Path:
    """The migrated project: the parent of its reports, or the input itself with --inplace."""
    if inplace_input is not None:
        src = Path(inplace_input)
        return src if src.is_dir() else src.parent
    return reports.parent


def keep_configs(project: Path, platform: str) -> dict[Path, bytes]:
    """The path-mapping configs already in a previous result (migrate --force rebuilds it)."""
    if not project.is_dir():
        return {}
    package = LAYOUTS[platform].package
    return {p: p.read_bytes() for p in project.rglob("path_mapping_config.py") if p.parent.name == package}


def finish(
    project: Path, reports: Path, platform: str, entry: Optional[str], kept: dict[Path, bytes], quiet: bool
) -> int:
    """After the core: restore kept configs, add the storage support. Returns 0 or 2."""
    for path, data in kept.items():
        if path.parent.parent.is_dir() and not path.exists():
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(data)
    try:
        section = add_storage_support(project, platform, entry, reports)
    except (StorageSetupError, OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        print(f"torchport migrate: error: --{platform}: {e}", file=sys.stderr)
        return 2
    if not quiet:
        at = f" line {section['import_line']}" if section["import_line"] else " (already there)"
        print(
            f"--{platform}: {section['package']}/ added, import in {section['entry']}{at}; "
            f"fill in {section['config']} ({len(section['suggestions'])} local path(s) suggested)"
        )
    for s in section["spawn"]:
        print(
            f"{s['file']}:{s['line']}: warning: torch.multiprocessing.spawn is not supported on the platform"
        )
    return 0
