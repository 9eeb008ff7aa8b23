"""`torchport migrate --object-storage` / `--modelarts`: make a migrated project run on a cloud
training platform whose data lives in object storage.

After the C++ core has migrated the project, this adds to the result:

- a package next to the entry script holding the path manager (python/torchport/cloud/path_manager.py,
  copied as is) and `path_mapping_config.py`, Ascend's `PATH_MAPPING_CONFIG` dict, with the local
  paths that the static analysis (`torchport dev storage-paths`, C++) found written in as
  commented suggestions;
- one import line in the entry script, after its docstring and `from __future__` imports;
- report rows: the inserted line in change_list.csv, each `torch.multiprocessing.spawn` call in
  unsupported_api.csv (the platform starts one process per device itself), and a `storage`
  section in report.json.

Layouts: with --modelarts, Ascend's names (its migration tool writes the package
`ascend_modelarts_function/` holding `modelarts_path_manager.py` and `path_mapping_config.py`);
with --object-storage, `torchport_storage/` holding `path_manager.py` and `path_mapping_config.py`.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from torchport import report_json
from torchport._core import core_binary

_HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Layout:
    platform: str  # "modelarts" or "object-storage"
    package: str  # the package directory created next to the entry script
    module: str  # the path manager's module name inside it

    @property
    def import_line(self) -> str:
        return (
            f"import {self.package}.{self.module}  # noqa: F401  "
            f"torchport: object storage <-> local paths ({self.package}/path_mapping_config.py)"
        )


LAYOUTS = {
    "modelarts": Layout("modelarts", "ascend_modelarts_function", "modelarts_path_manager"),
    "object-storage": Layout("object-storage", "torchport_storage", "path_manager"),
}

SPAWN_TIP = (
    "torch.multiprocessing.spawn is not supported on the platform: it starts one process per "
    "device itself; launch one process per device (torchrun) and read RANK/LOCAL_RANK instead"
)


class StorageSetupError(Exception):
    """A problem that stops the storage files from being generated (one line for the user)."""


def scan(files: list[Path]) -> dict[str, Any]:
    """Runs the C++ storage-path scan over `files`."""
    if not files:
        return {"files": []}
    proc = subprocess.run(
        [core_binary(), "dev", "storage-paths", *map(str, files)],
        check=False,
        capture_output=True,
        text=True,
    )
    if proc.returncode not in (0, 2) or not proc.stdout.strip():
        raise StorageSetupError(f"storage path scan failed: {proc.stderr.strip()}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _python_files(root: Path, skip: set[str]) -> list[Path]:
    out = []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).parts
        if rel and rel[0] in skip:
            continue
        out.append(p)
    return out


def choose_entry(root: Path, scanned: dict[str, Any], main: Optional[str]) -> Path:
    if main:
        entry = (root / main) if not Path(main).is_absolute() else Path(main)
        if not entry.is_file():
            # --main may name the file as it was in the input; find it in the result.
            hits = [p for p in root.rglob(Path(main).name) if p.is_file()]
            if len(hits) != 1:
                raise StorageSetupError(f"--main {main}: no such file in {root}")
            entry = hits[0]
        return entry
    guarded = [Path(f["path"]) for f in scanned["files"] if f.get("ok") and f.get("has_main_guard")]
    top = [p for p in guarded if p.parent == root]
    pick = top if len(top) == 1 else guarded
    if len(pick) == 1:
        return pick[0]
    names = ", ".join(str(p.relative_to(root)) for p in (top or guarded)[:6]) or "none"
    raise StorageSetupError(
        f"cannot tell which script is the entry point (scripts with a __main__ block: {names}); "
        "pass --main FILE"
    )


def _suggestion_lines(root: Path, scanned: dict[str, Any], role: str) -> list[str]:
    seen: set[str] = set()
    lines: list[str] = []
    for f in scanned["files"]:
        if not f.get("ok"):
            continue
        rel = Path(f["path"]).relative_to(root).as_posix()
        for p in f["paths"]:
            if p["role"] != role or p["value"] in seen:
                continue
            seen.add(p["value"])
            remote = "s3://BUCKET/" + p["value"].lstrip("./~").lstrip("/")
            where = f"{rel}:{p['line']} {p['kind']} {p['context']}".rstrip()
            lines.append(f"        # {p['value']!r}: {remote!r},  # {where}")
    return lines


def config_text(root: Path, scanned: dict[str, Any], layout: Layout) -> str:
    inputs = _suggestion_lines(root, scanned, "input")
    outputs = _suggestion_lines(root, scanned, "output")
    none = ["        # (none found: add your own)"]
    return "\n".join(
        [
            f'"""Where the training data and the results live: generated by torchport migrate '
            f"--{layout.platform}.",
            "",
            "Each entry maps a local path (as the code uses it) to an object-storage path:",
            "s3://bucket/key, obs://bucket/key (ModelArts) or file:///mounted/path.",
            '"input" entries are downloaded before training starts, "output" entries are uploaded when',
            'the process ends and after every torch.save below them. Put "{rank}" in an output path to',
            "upload every rank's copy; otherwise only rank 0 uploads. The commented lines are the",
            "local paths torchport found in the code (file:line): uncomment and edit the ones you need.",
            "Endpoint and credentials come from the environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,",
            "AWS_SECRET_ACCESS_KEY, or the platform's own), never from this file.",
            '"""',
            "",
            "PATH_MAPPING_CONFIG = {",
            '    "input": {',
            *(inputs or none),
            "    },",
            '    "output": {',
            *(outputs or none),
            "    },",
            "}",
            "",
        ]
    )


def _write(path: Path, text: str) -> None:
    """Atomic write that keeps the user's umask (a plain open, then a rename)."""
    tmp = path.with_name(f".{path.name}.torchport-tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def _insert_import(entry: Path, line_no: int, line: str) -> int:
    raw = entry.read_bytes()
    text = raw.decode("utf-8")
    if line in text:
        return 0  # already there: idempotent
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    at = max(0, min(line_no - 1, len(lines)))
    if at == len(lines) and lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += newline
    lines.insert(at, line + newline)
    _write(entry, "".join(lines))
    return at + 1


def _append_csv(path: Path, rows: list[list[str]]) -> None:
    if not rows or not path.is_file():
        return
    text = path.read_text(encoding="utf-8")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for r in rows:
        w.writerow(r)
    if text and not text.endswith("\n"):
        text += "\n"
    _write(path, text + buf.getvalue())


def add_storage_support(
    result_dir: Path, platform: str, main: Optional[str] = None, reports_dir: Optional[Path] = None
) -> dict[str, Any]:
    """Adds the path manager, its config and the import line to a migrated project."""
    layout = LAYOUTS[platform]
    root = result_dir.resolve()
    reports = reports_dir or (root / "torchport-report")
    files = _python_files(root, {"torchport-report", layout.package})
    scanned = scan(files)
    entry = choose_entry(root, scanned, main)
    entry_row = next((f for f in scanned["files"] if Path(f["path"]) == entry), None)
    if entry_row is None or not entry_row.get("ok"):
        why = entry_row.get("error", "not scanned") if entry_row else "not a Python file of the project"
        raise StorageSetupError(f"{entry}: cannot add the import line: {why}")

    package = entry.parent / layout.package
    package.mkdir(exist_ok=True)
    init = package / "__init__.py"
    if not init.exists():
        _write(init, f'"""Object-storage support added by torchport migrate --{platform}."""\n')
    _write(package / f"{layout.module}.py", (_HERE / "path_manager.py").read_text(encoding="utf-8"))
    config = package / "path_mapping_config.py"
    if not config.exists():  # never overwrite a config the user filled in
        _write(config, config_text(root, scanned, layout))
    inserted_at = _insert_import(entry, int(entry_row["insert_line"]), layout.import_line)

    rel_entry = entry.relative_to(root).as_posix()
    spawns = []
    for f in scanned["files"]:
        if f.get("ok"):
            rel = Path(f["path"]).relative_to(root).as_posix()
            # Lines in the entry after the inserted import moved down by one.
            shift = 1 if (rel == rel_entry and inserted_at) else 0
            spawns += [
                {"file": rel, "line": ln + (shift if ln >= inserted_at else 0)} for ln in f["spawn_lines"]
            ]
    section = {
        "platform": platform,
        "entry": rel_entry,
        "package": package.relative_to(root).as_posix(),
        "config": config.relative_to(root).as_posix(),
        "import_line": inserted_at or None,
        "suggestions": [
            {"file": Path(f["path"]).relative_to(root).as_posix(), **p}
            for f in scanned["files"]
            if f.get("ok")
            for p in f["paths"]
        ],
        "spawn": spawns,
    }
    if inserted_at:
        _append_csv(
            reports / "change_list.csv",
            [
                [
                    rel_entry,
                    str(inserted_at),
                    str(inserted_at),
                    "INSERT",
                    f"insert import {layout.package}.{layout.module} (--{platform} path mapping)",
                ]
            ],
        )
    _append_csv(
        reports / "unsupported_api.csv",
        [
            [s["file"], str(s["line"]), str(s["line"]), "torch.multiprocessing.spawn", SPAWN_TIP]
            for s in spawns
        ],
    )
    report = reports / "report.json"
    if report.is_file():
        report_json.add_section(report, "storage", section)
    return section
