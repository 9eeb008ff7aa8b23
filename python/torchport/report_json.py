"""report.json, the machine-readable report of `migrate` and `analyze`, read back.

The C++ core writes it (src/torchport/report/report.cc) in format 2, described in
docs/report-json.md: the summary as an object, then the tables `files`, `findings`, `cuda_ops`
and `advice` as rows of numbers whose columns are named in `columns`, where a text cell is an
index into `strings` (each distinct path, API, message, ... stored once; `strings[0]` is "").

This module is the one place in Python that knows that layout. Every consumer reads report.json
through `load` (a file) or `loads` (text, e.g. `analyze --format json` on stdout), which return
the report with one dict per file, finding, custom operator and advice row, keyed as the
columns are named, with an empty optional cell left out: the objects format 1 wrote (one
object per finding, no `format_version`). A format-1 report is returned as it is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Union

FORMAT_VERSION = 2

# Per table, its columns in order: (name, kind), kind "s" a string index, "n" a number, "b" a
# flag (0/1 -> bool); a trailing "?" leaves the key out when the cell is empty ("", 0, false).
_Columns = tuple[tuple[str, str], ...]
_TABLES: dict[str, _Columns] = {
    "files": (
        ("file", "s"),
        ("outcome", "s"),
        ("reason", "s?"),
        ("python", "b"),
        ("changed", "b"),
        ("not_migrated", "b?"),
        ("findings", "n"),
        ("min_torch_version", "s?"),
    ),
    "findings": (
        ("file", "s"),
        ("cell", "n?"),
        ("start_line", "n"),
        ("end_line", "n"),
        ("column", "n"),
        ("operation", "s"),
        ("code", "s"),
        ("api", "s"),
        ("message", "s"),
        ("applied", "b"),
        ("applicability", "s?"),
        ("changes", "s?"),
    ),
    "cuda_ops": (("file", "s"), ("api", "s")),
    "advice": (
        ("kind", "s"),
        ("file", "s"),
        ("cell", "n?"),
        ("start_line", "n"),
        ("end_line", "n"),
        ("api", "s"),
        ("api_type", "s?"),
        ("tips", "s?"),
        ("affinity_api", "s?"),
    ),
}


class ReportFormatError(ValueError):
    """report.json does not have the layout this torchport reads."""


def _expand_table(name: str, doc: dict[str, Any], strings: list[str]) -> list[dict[str, Any]]:
    spec = _TABLES[name]
    columns = doc.get("columns")
    named = columns.get(name) if isinstance(columns, dict) else None
    if named != [c for c, _ in spec]:
        raise ReportFormatError(
            f"report.json: the columns of {name!r} are {named!r}, expected {[c for c, _ in spec]!r}"
        )
    out: list[dict[str, Any]] = []
    rows = doc.get(name, [])
    if not isinstance(rows, list):
        raise ReportFormatError(f"report.json: {name} is not a list of rows")
    for n, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(spec):
            raise ReportFormatError(f"report.json: {name} row {n} is not a row of {len(spec)} cells: {row!r}")
        entry: dict[str, Any] = {}
        for (column, kind), cell in zip(spec, row):
            if not isinstance(cell, int) or isinstance(cell, bool) or cell < 0:
                raise ReportFormatError(
                    f"report.json: {name} row {n}, {column}: {cell!r} is not a count or an index"
                )
            value: Any = cell
            if kind[0] == "s":
                if cell >= len(strings):
                    raise ReportFormatError(
                        f"report.json: {name} row {n}, {column}: string {cell} of {len(strings)}"
                    )
                value = strings[cell]
            elif kind[0] == "b":
                value = bool(cell)
            if kind.endswith("?") and not value:
                continue
            entry[column] = value
        out.append(entry)
    return out


def _advice_entry(a: dict[str, Any]) -> dict[str, Any]:
    """An advice row as format 1 wrote it: a row without a line is project-level (no site)."""
    out: dict[str, Any] = {"kind": a["kind"]}
    if a["start_line"] == 0:
        out["scope"] = "project"
    else:
        out["scope"] = "site"
        out["file"] = a["file"]
        if "cell" in a:
            out["cell"] = a["cell"]
        out["start_line"] = a["start_line"]
        out["end_line"] = a["end_line"]
    out["api"] = a["api"]
    for key in ("api_type", "tips", "affinity_api"):
        if key in a:
            out[key] = a[key]
    return out


def expand(doc: dict[str, Any]) -> dict[str, Any]:
    """The parsed report.json `doc` with its tables as lists of dicts (see the module doc)."""
    if not isinstance(doc, dict):
        raise ReportFormatError("report.json: not a JSON object")
    version = doc.get("format_version")
    if (
        version is None
        and isinstance(doc.get("findings", []), list)
        and all(isinstance(f, dict) for f in doc.get("findings", []))
    ):
        return doc  # format 1: one object per finding already
    if version != FORMAT_VERSION:
        raise ReportFormatError(
            f"report.json: format_version {version!r}; this torchport reads {FORMAT_VERSION} (and format 1)"
        )
    strings = doc.get("strings")
    if (
        not isinstance(strings, list)
        or not strings
        or strings[0] != ""
        or not all(isinstance(x, str) for x in strings)
    ):
        raise ReportFormatError("report.json: no table of strings starting with the empty string")
    out = {k: v for k, v in doc.items() if k not in ("columns", "strings", *_TABLES)}
    out["files"] = _expand_table("files", doc, strings)
    out["findings"] = _expand_table("findings", doc, strings)
    out["cuda_ops"] = _expand_table("cuda_ops", doc, strings)
    if "advice" in doc:
        out["advice"] = [_advice_entry(a) for a in _expand_table("advice", doc, strings)]
    return out


def loads(text: Union[str, bytes]) -> dict[str, Any]:
    """report.json's text, expanded."""
    return expand(json.loads(text))


def load(path: Union[str, Path]) -> dict[str, Any]:
    """The report.json at `path` (the file, or a directory holding it), expanded."""
    p = Path(path)
    if p.is_dir():
        p = p / "report.json"
    return loads(p.read_bytes())


def add_section(path: Union[str, Path], key: str, value: Any) -> None:
    """Adds the top-level `key` (a section another step of the run writes, such as the cloud
    storage paths) to the report.json at `path`, leaving the tables as the core wrote them: the
    key goes first, after the opening brace. A key the report already has is replaced, and the
    report then rewritten on one line."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ReportFormatError(f"{p}: not a JSON object")
    if key in doc or not text.startswith("{\n"):
        doc[key] = value
        new = json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"
    else:
        section = json.dumps(value, ensure_ascii=False, indent=2).replace("\n", "\n  ")
        new = "{\n  " + json.dumps(key) + ": " + section + ",\n" + text[2:]
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(new, encoding="utf-8")
    tmp.replace(p)
