"""The migration report page: `torchport-report/index.html` beside the CSVs of migrate / analyze.

The C++ core writes this page with its CSVs (src/torchport/report/page.h, from this module's
template, migration.html). This module writes the same page from report.json, the input tree and
the migrated tree; the front end calls it only after `--object-storage` / `--modelarts` have
changed the entry file (torchport.static_cli), and tools/same_page.py uses `chunk_lines` to
compare two pages.

- index.html holds the page (inline CSS and script: no network) and the index data: the
  summary, every file with its counts and every finding. It stays small on large trees (the
  torch tree: a few MB) and renders lazily: the file tree opens one directory at a time and the
  findings table shows 200 rows at a time.
- files/N.js, one per file with findings or changes, holds that file's side-by-side diff (only
  the changed and flagged lines with 3 lines of context). The page loads it with a <script>
  element when the file is opened, which also works from file:// where fetch() does not.

Every row of the CSVs links here: `index.html#file=<File>&line=<Start Line>` opens that file at
that line.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
from pathlib import Path
from typing import Any, Optional

from torchport import report_json

CONTEXT = 3
_SEVERITY = {"UNSUPPORTED": "error", "UNKNOWN": "warning"}  # INSERT/MODIFY/DELETE: note


def severity(operation: str) -> str:
    """The level of a finding, as in the SARIF and GitHub outputs."""
    return _SEVERITY.get(operation, "note")


def _read_lines(path: Path) -> Optional[list[str]]:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace").splitlines()


def _notebook_lines(path: Path) -> Optional[tuple[list[str], dict[int, int]]]:
    """A notebook shown as Python: each code cell's source under a `# %% cell N` line (cells
    counted from 1 among all the notebook's cells, as the reports count them), and the line of
    the page where each cell's first line is. None when the file is not a readable notebook."""
    try:
        nb = json.loads(path.read_bytes())
        cells = nb["cells"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    lines: list[str] = []
    first: dict[int, int] = {}
    for n, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        text = "".join(src) if isinstance(src, list) else str(src)
        lines.append(f"# %% cell {n}")
        first[n] = len(lines) + 1
        lines += text.splitlines()
    return lines, first


def _align(a: list[str], b: list[str]) -> list[tuple[int, int, str]]:
    """(old line, new line, tag) for every line of both sides; 0 = no line on that side."""
    out: list[tuple[int, int, str]] = []
    if a == b:
        return [(i + 1, i + 1, "=") for i in range(len(a))]
    # Without autojunk, lines repeated thousands of times make the matcher quadratic (a 6,000-line
    # file took minutes); large files get difflib's popular-line heuristic.
    sm = difflib.SequenceMatcher(None, a, b, autojunk=max(len(a), len(b)) > 2000)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            out += [(i1 + k + 1, j1 + k + 1, "=") for k in range(i2 - i1)]
            continue
        n = max(i2 - i1, j2 - j1)
        for k in range(n):
            old = i1 + k + 1 if i1 + k < i2 else 0
            new = j1 + k + 1 if j1 + k < j2 else 0
            out.append((old, new, "~" if old and new else ("-" if old else "+")))
    return out


def file_chunk(
    rel: str, before: list[str], after: Optional[list[str]], finding_lines: set[int]
) -> dict[str, Any]:
    """The detail of one file: the changed and flagged lines with CONTEXT lines around them.

    The rows come in file order and carry no line numbers: both sides start before line 1, and
    each row moves them on (the page counts them, as `chunk_lines` does):

    - a string: a line both sides have, with this text (old and new line + 1);
    - an int k: k lines both sides have, left out (old and new line + k);
    - ["~", old text, new text], ["-", old text], ["+", new text]: a line changed (old and new
      line + 1), only in the original (old + 1) or only in the migrated file (new + 1).

    A line both sides share is most of every chunk (the torch tree: 224,000 of 226,000 rows),
    so it is stored once, without its numbers.
    """
    aligned = _align(before, after if after is not None else before)
    keep = [False] * len(aligned)
    for k, (old, _new, tag) in enumerate(aligned):
        if tag != "=" or old in finding_lines:
            for j in range(max(0, k - CONTEXT), min(len(aligned), k + CONTEXT + 1)):
                keep[j] = True
    rows: list[Any] = []
    skipped = 0
    for k, (old, new, tag) in enumerate(aligned):
        if not keep[k]:
            skipped += 1  # only shared lines are ever left out: a change keeps its row
            continue
        if skipped:
            rows.append(skipped)
            skipped = 0
        old_text = before[old - 1] if old else ""
        new_text = (after if after is not None else before)[new - 1] if new else ""
        if tag == "=":
            rows.append(old_text)
        elif tag == "~":
            rows.append(["~", old_text, new_text])
        else:
            rows.append([tag, old_text if tag == "-" else new_text])
    if skipped:
        rows.append(skipped)
    return {"file": rel, "diff": after is not None, "rows": rows}


def chunk_lines(rows: list[Any]) -> list[tuple[Any, ...]]:
    """A chunk's rows with their line numbers, as the page shows them: (old line, old text, new
    line, new text, tag) with 0 and "" for a side without the line, or ("gap", k)."""
    out: list[tuple[Any, ...]] = []
    old = new = 0
    for row in rows:
        if isinstance(row, int):
            old, new = old + row, new + row
            out.append(("gap", row))
        elif isinstance(row, str):
            old, new = old + 1, new + 1
            out.append((old, row, new, row, "="))
        elif row[0] == "~":
            old, new = old + 1, new + 1
            out.append((old, row[1], new, row[2], "~"))
        elif row[0] == "-":
            old += 1
            out.append((old, row[1], 0, "", "-"))
        else:
            new += 1
            out.append((0, "", new, row[1], "+"))
    return out


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _script_json(data: Any) -> str:
    """JSON safe inside a <script> element."""
    return (
        json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        .replace("</", "<\\/")
        .replace("<!--", "<\\!--")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _other_targets(report_dir: Path, rep: dict[str, Any]) -> list[dict[str, Any]]:
    """The same project migrated for other targets into the same OUTDIR
    (OUTDIR/<name>_<target>/torchport-report/report.json): one summary row each, with a link."""
    result = report_dir.parent
    suffix = "_" + str(rep.get("target"))
    if not result.name.endswith(suffix):
        return []
    stem = result.name[: -len(suffix)]
    rows = []
    for other in sorted(result.parent.glob(f"{stem}_*/torchport-report/report.json")):
        try:
            o = report_json.load(other)
        except (OSError, ValueError):
            continue
        if o.get("input") != rep.get("input") or other.parent.parent.name != f"{stem}_{o.get('target')}":
            continue
        s = o.get("summary", {})
        rows.append(
            {
                "target": o.get("target"),
                "href": f"../../{other.parent.parent.name}/torchport-report/index.html",
                "changed": s.get("changed", 0),
                "changes": s.get("insert", 0) + s.get("modify", 0) + s.get("delete", 0),
                "unsupported": s.get("unsupported", 0),
                "unknown": s.get("unknown", 0),
                "cuda_ops": s.get("cuda_ops", 0),
                "third_party": len({f["api"] for f in o.get("findings", []) if f.get("code") == "TP002"}),
            }
        )
    return rows


def write_migration_page(report_dir: Path) -> Path:
    """Writes index.html and files/*.js into `report_dir` (which holds report.json)."""
    report_dir = Path(report_dir)
    rep = report_json.load(report_dir / "report.json")
    input_root = Path(rep["input"])
    input_is_dir = input_root.is_dir()
    output = rep.get("output") or ""
    migrate = rep.get("command") == "migrate" and bool(output)
    inplace = migrate and Path(output) == input_root
    # In place, the originals are in the backup directory, which holds the reports by default.
    before_root = report_dir.parent if inplace else input_root
    after_root = Path(output) if migrate else None

    def source(root: Path, rel: str) -> Path:
        return root / rel if input_is_dir or root.is_dir() else root

    files = rep["files"]
    index_of = {f["file"]: i for i, f in enumerate(files)}
    by_file: dict[int, list[dict[str, Any]]] = {}
    rows: list[list[Any]] = []
    # Operations, codes, APIs, messages, outcomes and reasons repeat (the torch tree: 49,000
    # findings, 12,000 files, 6,500 distinct strings): the page holds each once and the rows
    # refer to them by index.
    strings: list[str] = []
    string_id: dict[str, int] = {}

    def intern(text: str) -> int:
        if text not in string_id:
            string_id[text] = len(strings)
            strings.append(text)
        return string_id[text]

    # A notebook's rows are located in cells: the page shows the notebook as Python (its code
    # cells one after another), and a row's line there is its cell's first line + its line - 1.
    notebooks: dict[str, tuple[list[str], dict[int, int]]] = {}
    for f in files:
        if f["file"].endswith(".ipynb"):
            shown = _notebook_lines(source(before_root, f["file"]))
            if shown is None and inplace:
                shown = _notebook_lines(source(input_root, f["file"]))
            if shown is not None:
                notebooks[f["file"]] = shown

    def page_line(r: dict[str, Any], line: int) -> int:
        nb = notebooks.get(r["file"])
        cell = r.get("cell", 0)
        if not cell or nb is None or cell not in nb[1]:
            return line
        return nb[1][cell] + line - 1

    for r in rep["findings"]:
        fi = index_of.get(r["file"], -1)
        by_file.setdefault(fi, []).append(r)
        op, code, applied = intern(r["operation"]), intern(r["code"]), 1 if r["applied"] else 0
        api, msg = intern(r["api"]), intern(r["message"])
        row = [fi, page_line(r, r["start_line"]), r["column"], op, code, api, msg, applied]
        if r.get("cell"):
            row += [r["cell"], r["start_line"]]  # shown as file:cellN:line:col
        rows.append(row)

    chunk_dir = report_dir / "files"
    tmp_dir = report_dir / f".files.tmp-{os.getpid()}"
    shutil.rmtree(tmp_dir, ignore_errors=True)
    tmp_dir.mkdir(parents=True)
    file_rows: list[list[Any]] = []
    for i, f in enumerate(files):
        found = by_file.get(i, [])
        counts = {"error": 0, "warning": 0, "note": 0}
        for r in found:
            counts[severity(r["operation"])] += 1
        chunk = -1
        if found or f.get("changed"):
            nb = notebooks.get(f["file"])
            read = _read_lines
            if nb is not None:

                def read(p: Path) -> Optional[list[str]]:
                    shown = _notebook_lines(p)
                    return shown[0] if shown is not None else None

            before = nb[0] if nb is not None else read(source(before_root, f["file"]))
            if before is None and inplace and not f.get("changed"):
                before = read(source(input_root, f["file"]))  # unchanged: not backed up
            after = None
            if f.get("changed") and after_root is not None:
                after = read(source(after_root, f["file"]))
            if before is not None:
                lines: set[int] = set()
                for r in found:
                    start = page_line(r, r["start_line"])
                    lines.update(range(start, max(start, page_line(r, r["end_line"])) + 1))
                data = file_chunk(f["file"], before, after, lines)
                chunk = i
                (tmp_dir / f"{i}.js").write_text(f"tpChunk({i},{_script_json(data)});\n", encoding="utf-8")
        file_rows.append(
            [
                f["file"],
                intern(f["outcome"]),
                intern(f.get("reason", "")),
                1 if f.get("changed") else 0,
                counts["error"],
                counts["warning"],
                counts["note"],
                chunk,
            ]
        )
    shutil.rmtree(chunk_dir, ignore_errors=True)
    os.replace(tmp_dir, chunk_dir)

    third_party = sorted({r["api"] for r in rep["findings"] if r["code"] == "TP002"})
    data = {
        "command": rep.get("command"),
        "target": rep.get("target"),
        "torch_version": rep.get("torch_version") or "",
        "min_torch_version": rep.get("min_torch_version") or "",
        "input": rep.get("input"),
        "output": output,
        "version": rep.get("version"),
        "summary": rep.get("summary", {}),
        "files": file_rows,
        "rows": rows,
        "strings": strings,
        "cuda_ops": [[c.get("file", ""), c.get("api", "")] for c in rep.get("cuda_ops", [])],
        "third_party": third_party,
        "csvs": sorted(p.name for p in report_dir.glob("*.csv")),
        "targets": _other_targets(report_dir, rep) if migrate and not inplace else [],
    }
    template = (Path(__file__).parent / "migration.html").read_text(encoding="utf-8")
    page = template.replace("/*DATA*/", _script_json(data), 1)
    out = report_dir / "index.html"
    _write_atomic(out, page)
    return out
