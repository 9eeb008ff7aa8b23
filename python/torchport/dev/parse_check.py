"""`torchport dev parse-check`: torchport's parser against CPython's `ast`, file by file.

For every .py file under the given paths it compares
  (a) accept/reject: both parsers accept the file, or both reject it;
  (b) for files both accept, the kind and exact span (line, col, end_line, end_col) of every node
      of the kinds listed in ast_spans.POSITIONED_KINDS, plus withitem and match_case;
  (c) the byte-identical round trip reported by our parser.
It prints the counts and the first disagreements with path:line, and exits 0 only at 100%.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import sysconfig
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, List, Optional, Sequence

from torchport._core import CoreNotFoundError, core_binary
from torchport.dev import ast_spans

ORACLE_SCRIPT = Path(ast_spans.__file__).resolve()


@dataclass
class Disagreement:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


@dataclass
class Summary:
    files: int = 0
    both_accept: int = 0
    both_reject: int = 0
    only_ours_rejects: int = 0
    only_ast_rejects: int = 0
    span_mismatch_files: int = 0
    roundtrip_failures: int = 0
    nodes_compared: int = 0
    disagreements: List[Disagreement] = field(default_factory=list)
    rejected_by_both: List[str] = field(default_factory=list)

    def merge(self, other: Summary) -> None:
        for name in (
            "files",
            "both_accept",
            "both_reject",
            "only_ours_rejects",
            "only_ast_rejects",
            "span_mismatch_files",
            "roundtrip_failures",
            "nodes_compared",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.disagreements.extend(other.disagreements)
        self.rejected_by_both.extend(other.rejected_by_both)

    @property
    def agreeing_files(self) -> int:
        return self.files - self.only_ast_rejects - self.only_ours_rejects - self.span_mismatch_files

    @property
    def ok(self) -> bool:
        return self.agreeing_files == self.files and self.roundtrip_failures == 0


def discover(paths: Iterable[str]) -> List[str]:
    """Every .py file under `paths` (files are taken as given), sorted, without duplicates."""
    found: set[str] = set()
    for p in paths:
        path = Path(p)
        if path.is_file():
            found.add(str(path))
        elif path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = [d for d in dirs if d != "__pycache__"]
                for name in files:
                    if name.endswith(".py"):
                        found.add(os.path.join(root, name))
        else:
            raise FileNotFoundError(f"{p}: no such file or directory")
    return sorted(found)


def _chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def run_oracle(files: Sequence[str], python: Optional[str]) -> dict[str, dict[str, Any]]:
    """CPython's verdict for every file, from this interpreter's ast or from `python`'s."""
    if python:
        proc = subprocess.run(
            [python, str(ORACLE_SCRIPT)],
            input="\n".join(files) + "\n",
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"oracle interpreter {python} failed: {proc.stderr.strip()[-2000:]}")
        records = [json.loads(line) for line in proc.stdout.splitlines() if line]
    else:
        records = list(ast_spans.dump_files(files))
    return {r["path"]: r for r in records}


def run_ours(files: Sequence[str], jobs: int, binary: Optional[str] = None) -> dict[str, dict[str, Any]]:
    """torchport's verdict for every file, from `torchport dev dump-spans`."""
    proc = subprocess.run(
        [binary or core_binary(), "dev", "dump-spans", "--stdin-list", "--jobs", str(jobs)],
        input="\n".join(files) + "\n",
        capture_output=True,
        text=True,
        errors="surrogateescape",
        check=False,
    )
    records: dict[str, dict[str, Any]] = {}
    for line in proc.stdout.splitlines():
        if line:
            record = json.loads(line)
            records[record["path"]] = record
    missing = [f for f in files if f not in records]
    if missing:
        detail = proc.stderr.strip()[-2000:]
        raise RuntimeError(
            f"`torchport dev dump-spans` gave no result for {len(missing)} file(s), the first "
            f"{missing[0]} (exit code {proc.returncode}){': ' + detail if detail else ''}"
        )
    return records


def check_chunk(files: Sequence[str], python: Optional[str], binary: str) -> Summary:
    """Both parsers on one chunk of files, compared; runs in a worker process."""
    return compare(files, run_oracle(files, python), run_ours(files, 1, binary))


def check(files: Sequence[str], python: Optional[str], jobs: int) -> Summary:
    """Every file checked in chunks across `jobs` worker processes; the partial summaries merged."""
    binary = core_binary()
    chunks = list(_chunks(files, 48))
    if jobs <= 1:
        parts = [check_chunk(c, python, binary) for c in chunks]
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            parts = list(pool.map(check_chunk, chunks, [python] * len(chunks), [binary] * len(chunks)))
    total = Summary()
    for part in parts:
        total.merge(part)
    return total


def _first_line(nodes: Iterable[Sequence[Any]]) -> int:
    return min((int(n[1]) for n in nodes), default=0)


def compare(
    files: Sequence[str],
    oracle: dict[str, dict[str, Any]],
    ours: dict[str, dict[str, Any]],
) -> Summary:
    s = Summary(files=len(files))
    for path in files:
        a, o = oracle[path], ours[path]
        if not a["ok"] and not o["ok"]:
            s.both_reject += 1
            s.rejected_by_both.append(path)
            continue
        if a["ok"] and not o["ok"]:
            s.only_ours_rejects += 1
            err = o["error"]
            s.disagreements.append(
                Disagreement(path, err["line"], f"we reject a file CPython accepts: {err['message']}")
            )
            continue
        if o["ok"] and not a["ok"]:
            s.only_ast_rejects += 1
            err = a["error"]
            s.disagreements.append(
                Disagreement(path, err["line"], f"we accept a file CPython rejects: {err['message']}")
            )
            continue
        s.both_accept += 1
        if not o.get("roundtrip", False):
            s.roundtrip_failures += 1
            s.disagreements.append(Disagreement(path, 1, "printing our tree does not give back the file"))
        want = collections.Counter(tuple(n) for n in a["nodes"])
        got = collections.Counter(tuple(n) for n in o["nodes"])
        s.nodes_compared += sum(want.values())
        if want != got:
            s.span_mismatch_files += 1
            missing = sorted(want - got, key=lambda n: (n[1], n[2]))
            extra = sorted(got - want, key=lambda n: (n[1], n[2]))
            line = _first_line(list(missing[:1]) + list(extra[:1]))
            parts = []
            if missing:
                parts.append("CPython has " + ", ".join(_fmt(n) for n in missing[:3]))
            if extra:
                parts.append("we have " + ", ".join(_fmt(n) for n in extra[:3]))
            s.disagreements.append(Disagreement(path, line, "; ".join(parts)))
    return s


def _fmt(node: Sequence[Any]) -> str:
    kind, line, col, end_line, end_col = node
    return f"{kind} {line}:{col}-{end_line}:{end_col}"


def default_roots(stdlib: bool, site_packages: bool) -> List[str]:
    roots: List[str] = []
    if stdlib:
        roots.append(sysconfig.get_paths()["stdlib"])
    if site_packages:
        for key in ("purelib", "platlib"):
            p = sysconfig.get_paths()[key]
            if p not in roots:
                roots.append(p)
    return roots


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="torchport dev parse-check",
        description="Compare torchport's Python parser with CPython's ast over every .py file under PATHs.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or directories to check")
    p.add_argument("--stdlib", action="store_true", help="add this interpreter's standard library")
    p.add_argument(
        "--site-packages", action="store_true", help="add this interpreter's site-packages (torch included)"
    )
    p.add_argument(
        "--python", metavar="EXE", help="use this interpreter's ast as the oracle (default: this one)"
    )
    p.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, help="worker processes/threads")
    p.add_argument("--show", type=int, default=20, metavar="N", help="print the first N disagreements")
    p.add_argument("--json", metavar="FILE", help="also write the summary and every disagreement as JSON")
    p.add_argument(
        "--list-rejected", action="store_true", help="list the files both parsers reject (invalid on purpose)"
    )
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    roots = list(args.paths) + default_roots(args.stdlib, args.site_packages)
    if not roots:
        print(
            "torchport dev parse-check: error: give at least one PATH, --stdlib or --site-packages",
            file=sys.stderr,
        )
        return 2
    try:
        files = discover(roots)
    except FileNotFoundError as e:
        print(f"torchport dev parse-check: error: {e}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        s = check(files, args.python, args.jobs)
    except (CoreNotFoundError, RuntimeError, OSError) as e:
        print(f"torchport dev parse-check: error: {e}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - t0

    for d in s.disagreements[: args.show]:
        print(d)
    if len(s.disagreements) > args.show:
        print(f"... and {len(s.disagreements) - args.show} more")
    if args.list_rejected:
        for path in s.rejected_by_both:
            print(f"rejected by both: {path}")
    pct = 100.0 * s.agreeing_files / s.files if s.files else 100.0
    rt = s.both_accept - s.roundtrip_failures
    print(
        f"files: {s.files}  agree: {s.agreeing_files} ({pct:.3f}%)  "
        f"both accept: {s.both_accept}  both reject: {s.both_reject}\n"
        f"only we reject: {s.only_ours_rejects}  only CPython rejects: {s.only_ast_rejects}  "
        f"span mismatches: {s.span_mismatch_files} files  nodes compared: {s.nodes_compared}\n"
        f"round trip byte-identical: {rt}/{s.both_accept}  time: {elapsed:.1f}s"
    )
    if args.json:
        payload = {
            "files": s.files,
            "agree": s.agreeing_files,
            "both_accept": s.both_accept,
            "both_reject": s.both_reject,
            "only_ours_rejects": s.only_ours_rejects,
            "only_ast_rejects": s.only_ast_rejects,
            "span_mismatch_files": s.span_mismatch_files,
            "roundtrip_failures": s.roundtrip_failures,
            "nodes_compared": s.nodes_compared,
            "rejected_by_both": s.rejected_by_both,
            "disagreements": [{"path": d.path, "line": d.line, "what": d.what} for d in s.disagreements],
        }
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0 if s.ok else 1
