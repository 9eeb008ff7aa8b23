"""The static part of the corpus suite: every corpus project x every target through `torchport
migrate`, judged by Python's own `ast` and by the oracle (docs/fidelity.md).

For each (project, target) pair it measures:
- crash: migrate exited with a status other than 0 (all Success/Skip) or 1 (some file a Failure),
  or wrote no report.json;
- failed: Python files that migrate reported as Failure (copied unchanged);
- parse: output .py files that do not parse with `ast` although their input does;
- unflagged: CUDA-specific references (tests/corpus/oracle.py) left in the output that no report
  row covers;
- remigrate: output .py files that a second migrate (same target) of the output changes;
- unfixed: CUDA-specific references left in the output files, reported or not, other than the
  ones the catalogue keeps on purpose (tests/corpus/kept.py);
- not_migrated: files migrate kept as they were (a Failure row, or a Python file skipped);
- files, changed, seconds: information only (not ratcheted; seconds is wall time and noisy).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from torchport import report_json

from . import kept, notebooks, oracle

REPO = Path(__file__).resolve().parents[2]
TARGETS = ("npu", "mlu", "musa", "xpu", "mps", "hpu", "cpu", "accelerator")
# The cells the ratchet compares: lower is better, and none may grow.
RATCHETED = ("crash", "failed", "parse", "unflagged", "remigrate", "unfixed", "not_migrated")
FIDELITY_JSON = REPO / "docs" / "fidelity.json"
FIDELITY_MD = REPO / "docs" / "fidelity.md"
MAX_DETAILS = 200  # per cell, in fidelity.json


def corpus_dir() -> Optional[Path]:
    """$TORCHPORT_CORPUS, else the first `shared/corpus` next to the repository or one of its
    parents (../shared/corpus for a clone at /work/main, ../../shared/corpus for a worktree)."""
    env = os.environ.get("TORCHPORT_CORPUS")
    if env:
        p = Path(env)
        return p if p.is_dir() else None
    for parent in REPO.parents:
        p = parent / "shared" / "corpus"
        if p.is_dir():
            return p
    return None


def projects(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.iterdir() if p.is_dir() and not p.name.startswith("."))


def torchport_cmd() -> list[str]:
    return [sys.executable, "-m", "torchport"]


@dataclass
class Problem:
    """One reason a cell is not clean: `file:line: reason`."""

    kind: str  # one of RATCHETED
    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.kind}: {self.reason}"


@dataclass
class Cell:
    project: str
    target: str
    files: int = 0
    changed: int = 0
    refs: int = 0  # oracle references in the input
    left: int = 0  # oracle references in the output, reported or not
    crash: int = 0
    failed: int = 0
    parse: int = 0
    unflagged: int = 0
    remigrate: int = 0
    unfixed: int = 0
    not_migrated: int = 0
    seconds: float = 0.0
    problems: list[Problem] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.project}/{self.target}"

    def add(self, kind: str, file: str, line: int, reason: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        self.problems.append(Problem(kind, file, line, reason))


def _py_files(root: Path) -> list[Path]:
    """The Python files and Jupyter notebooks of a project."""
    return sorted(
        p.relative_to(root)
        for pattern in ("*.py", "*.ipynb")
        for p in root.rglob(pattern)
        if p.is_file() and "torchport-report" not in p.relative_to(root).parts
    )


def _read(p: Path) -> str:
    """A file's text; a notebook's is its code cells as one module (tests/corpus/notebooks.py)."""
    if p.suffix == ".ipynb":
        return notebooks.read_module(p)[0]
    return p.read_bytes().decode("utf-8", errors="replace")


def _parses(src: str) -> Optional[SyntaxError]:
    try:
        with oracle.PARSE_LOCK:
            ast.parse(src)
    except SyntaxError as e:
        return e
    return None


def _migrate(src: Path, target: str, outdir: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    cmd = [*torchport_cmd(), "migrate", "-q", "-j", "1", "-t", target, "-o", str(outdir), str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    return proc, outdir / f"{src.name}_{target}"


def _rows(report: dict, project: Optional[Path] = None) -> dict[str, list[oracle.Row]]:
    """The report's rows by file. A notebook's rows are in cells (`"cell": N`): their lines become
    lines of the input notebook's module (tests/corpus/notebooks.py), where the oracle reads them."""
    rows: dict[str, list[oracle.Row]] = {}
    cells: dict[str, dict[int, int]] = {}
    for f in report.get("findings", []):
        base = 0
        if f.get("cell") and project is not None:
            if f["file"] not in cells:
                path = project / f["file"] if project.is_dir() else project
                cells[f["file"]] = notebooks.read_module(path)[1] if path.is_file() else {}
            base = cells[f["file"]].get(int(f["cell"]), 1) - 1
        rows.setdefault(f["file"], []).append(
            oracle.Row(
                base + int(f.get("start_line", 0)),
                base + int(f.get("end_line", f.get("start_line", 0))),
                str(f.get("operation", "")),
                str(f.get("api", "")),
                str(f.get("message", "")),
            )
        )
    return rows


def run_cell(project: Path, target: str, work: Path) -> Cell:
    cell = Cell(project.name, target)
    inputs = _py_files(project)
    cell.files = len(inputs)
    t0 = time.monotonic()
    proc, out = _migrate(project, target, work / "first")
    cell.seconds = round(time.monotonic() - t0, 2)
    report_path = out / "torchport-report" / "report.json"
    if proc.returncode not in (0, 1) or not report_path.is_file():
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        cell.add("crash", project.name, 0, f"migrate exited {proc.returncode}: {last}")
        return cell
    report = report_json.load(report_path)
    rows = _rows(report, project)
    failures = {
        f["file"]: f.get("reason", "")
        for f in report.get("files", [])
        if f.get("outcome") == "Failure" and f.get("python", True)
    }
    for f in report.get("files", []):
        if f.get("outcome") == "Failure" or (f.get("outcome") == "Skip" and f.get("python", True)):
            cell.add("not_migrated", f["file"], 0, f"{f.get('outcome')}: {f.get('reason', '')}")
    for rel in inputs:
        key = rel.as_posix()
        before = _read(project / rel)
        after_path = out / rel
        if not after_path.is_file():
            cell.add("crash", key, 0, "missing from the migrate output")
            continue
        after = _read(after_path)
        if after != before:
            cell.changed += 1
        if key in failures:
            cell.add("failed", key, 0, f"migrate Failure: {failures[key]}")
            _count_unfixed(cell, key, after)
            continue  # copied unchanged and reported whole: its references are flagged by that row
        err = _parses(after)
        if err is not None:
            if _parses(before) is None:
                cell.add("parse", key, err.lineno or 0, f"output does not parse: {err.msg}")
            continue
        try:
            cell.refs += len(oracle.find_references(before))
            cell.left += _count_unfixed(cell, key, after)
            left = oracle.unflagged(before, after, rows.get(key, []))
        except SyntaxError:  # the input does not parse with this Python: the oracle cannot judge it
            continue
        for u in left:
            cell.add(
                "unflagged",
                key,
                u.ref.line,
                f"{u.ref.kind} `{u.ref.text}` (input line {u.input_lines[0]}) has no report row",
            )
    # a second migrate of the output changes nothing
    proc2, out2 = _migrate(out, target, work / "second")
    if proc2.returncode not in (0, 1):
        last = (proc2.stderr.strip().splitlines() or ["(no output)"])[-1]
        cell.add("remigrate", project.name, 0, f"second migrate exited {proc2.returncode}: {last}")
    else:
        for rel in inputs:
            a, b = out / rel, out2 / rel
            if a.is_file() and b.is_file() and a.read_bytes() != b.read_bytes():
                line = _first_diff_line(_read(a), _read(b))
                cell.add("remigrate", rel.as_posix(), line, "a second migrate changes this line")
    return cell


def _count_unfixed(cell: Cell, key: str, after: str) -> int:
    """Adds the file's unfixed references to the cell; returns how many references it left."""
    try:
        refs = oracle.find_references(after)
    except SyntaxError:
        return 0
    for r in kept.unfixed(refs, cell.target):
        cell.add("unfixed", key, r.line, f"{r.kind} `{r.text}` left in the output")
    return len(refs)


def _first_diff_line(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines()), 1):
        if x != y:
            return i
    return min(len(a.splitlines()), len(b.splitlines())) + 1


def run_all(
    corpus: Path,
    targets: tuple[str, ...] = TARGETS,
    only: Optional[list[str]] = None,
    jobs: int = 2,
) -> list[Cell]:
    return run_projects([p for p in projects(corpus) if not only or p.name in only], targets, jobs)


def run_notebooks(targets: tuple[str, ...] = TARGETS, jobs: int = 2) -> list[Cell]:
    """The cells of ../shared/notebooks (real Jupyter notebooks, issue 34), one project; [] when
    the folder is not there. Not in docs/fidelity.json: every ratcheted column but unfixed must be 0."""
    nb = notebooks.notebooks_dir()
    return run_projects([nb], targets, jobs) if nb is not None else []


def run_projects(projects_: list[Path], targets: tuple[str, ...] = TARGETS, jobs: int = 2) -> list[Cell]:
    pairs = [(p, t) for p in projects_ for t in targets]
    base = Path(tempfile.mkdtemp(prefix="torchport-corpus-"))
    try:

        def one(i: int) -> Cell:
            p, t = pairs[i]
            work = base / str(i)
            work.mkdir()
            try:
                return run_cell(p, t, work)
            finally:
                shutil.rmtree(work, ignore_errors=True)

        with ThreadPoolExecutor(max_workers=jobs) as ex:
            return list(ex.map(one, range(len(pairs))))
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- the committed table and the ratchet --------------------------------------------------------


def to_json(cells: list[Cell], corpus: Path) -> dict:
    index = {}
    idx = corpus / "index.json"
    if idx.is_file():
        index = {k: v.get("commit", "") for k, v in json.loads(idx.read_text()).items()}
    return {
        "comment": "Written by `python -m tests.corpus --update`; read by tests/python/test_corpus_static.py",
        "ratcheted": list(RATCHETED),
        "corpus_commits": index,
        "cells": {
            c.key: {
                **{k: v for k, v in asdict(c).items() if k not in ("project", "target", "problems")},
                "problems": [str(p) for p in c.problems[:MAX_DETAILS]],
            }
            for c in cells
        },
    }


def compare(committed: dict, cells: list[Cell]) -> tuple[list[str], list[str]]:
    """(regressions, improvements) of `cells` against the committed table."""
    worse: list[str] = []
    better: list[str] = []
    old_cells = committed.get("cells", {})
    for c in cells:
        old = old_cells.get(c.key)
        if old is None:
            worse.append(f"{c.project} {c.target}: not in docs/fidelity.json (a new project or target)")
            continue
        for k in RATCHETED:
            now, was = getattr(c, k), int(old.get(k, 0))
            if now > was:
                lines = [f"{c.project} {c.target}: {k} {was} -> {now}"]
                # compare without the output line, which moves when an earlier line changes
                seen = {re.sub(r":\d+: ", ": ", p, count=1) for p in old.get("problems", [])}
                new = [
                    p for p in c.problems if p.kind == k and f"{p.file}: {p.kind}: {p.reason}" not in seen
                ] or [p for p in c.problems if p.kind == k]
                lines += [f"  {c.project} {c.target} {p}" for p in new[:20]]
                worse.append("\n".join(lines))
            elif now < was:
                better.append(f"{c.project} {c.target}: {k} {was} -> {now}")
    return worse, better


def markdown_table(cells: list[Cell]) -> str:
    head = (
        "| project | target | files | changed | refs | left | crash | failed | parse | unflagged | remigrate "
        "| unfixed | not migrated | seconds |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    rows = [
        f"| {c.project} | {c.target} | {c.files} | {c.changed} | {c.refs} | {c.left} "
        f"| {c.crash} | {c.failed} | {c.parse} | {c.unflagged} | {c.remigrate} | {c.unfixed} "
        f"| {c.not_migrated} | {c.seconds:.2f} |"
        for c in cells
    ]
    totals = {k: sum(getattr(c, k) for c in cells) for k in RATCHETED}
    total = (
        f"| **all** | | {sum(c.files for c in cells)} | {sum(c.changed for c in cells)} "
        f"| {sum(c.refs for c in cells)} | {sum(c.left for c in cells)} | {totals['crash']} "
        f"| {totals['failed']} | {totals['parse']} | {totals['unflagged']} | {totals['remigrate']} "
        f"| {totals['unfixed']} | {totals['not_migrated']} | {sum(c.seconds for c in cells):.1f} |"
    )
    return head + "\n".join(rows) + "\n" + total + "\n"


BEGIN = "<!-- static table: generated by `python -m tests.corpus --update` -->"
END = "<!-- end of static table -->"


def replace_block(text: str, begin: str, end: str, body: str) -> str:
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < 0:
        raise SystemExit(f"{FIDELITY_MD}: markers {begin!r} / {end!r} not found")
    return text[: i + len(begin)] + "\n\n" + body + "\n" + text[j:]
