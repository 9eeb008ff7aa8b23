#!/usr/bin/env python3
"""Marks a rule fixture's expected files as reviewed (issue 32 §4).

A rule fixture (tests/fixtures/rules/<case>/) pairs an input with expectations written by hand:
per target, the output (<target>.py, or <target>.<ext> for a project file) and the findings
(<target>.findings), sometimes <target>.min_torch. tests/python/test_fixture_review.py fails on
any expected file whose bytes are not in tests/fixtures/rules/REVIEWED, so an expectation that
was pasted from the tool's output, or edited since its review, does not pass unseen.

    python tools/review_fixture.py oom_text            # show what to review: input -> output diff,
                                                       # and the findings, per target
    python tools/review_fixture.py oom_text --accept   # after reading them: record their checksums

--accept records the files as they are now; run it only once you have read them.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "rules"
REVIEWED = FIXTURES / "REVIEWED"
HEADER = """\
# The reviewed bytes of every expected file of the rule fixtures: sha256, then the path under
# tests/fixtures/rules/. tests/python/test_fixture_review.py fails on an expected file whose bytes
# are not listed. Add entries with `python tools/review_fixture.py CASE --accept`, after reading the
# expectations (tools/review_fixture.py CASE shows them); never by hand.
# The first entries (2026-11-28) are the expectations as committed when this list was made; the
# findings files were rewritten the same day to pin code, place and message, and read line by line.
"""


def expected_files(case: Path) -> list[Path]:
    """The expected files of one fixture directory: everything but its input and options."""
    return sorted(
        p
        for p in case.iterdir()
        if p.is_file() and p.stem != "input" and p.suffix != ".options" and not p.name.startswith("rules")
    )


def all_expected() -> list[Path]:
    return [f for case in sorted(p for p in FIXTURES.iterdir() if p.is_dir()) for f in expected_files(case)]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_reviewed() -> dict[str, str]:
    """path (under tests/fixtures/rules) -> the reviewed sha256."""
    out: dict[str, str] = {}
    if not REVIEWED.exists():
        return out
    for line in REVIEWED.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        sha, rel = line.split(maxsplit=1)
        out[rel] = sha
    return out


def write_reviewed(entries: dict[str, str]) -> None:
    body = "".join(f"{sha}  {rel}\n" for rel, sha in sorted(entries.items()))
    tmp = REVIEWED.with_suffix(".tmp")
    tmp.write_text(HEADER + body, encoding="utf-8")
    tmp.replace(REVIEWED)


def show(case: Path) -> None:
    inputs = [p for p in case.iterdir() if p.stem == "input"]
    src = inputs[0].read_text(encoding="utf-8").splitlines(keepends=True) if inputs else []
    for f in expected_files(case):
        print(f"=== {f.relative_to(FIXTURES)}")
        if inputs and f.suffix == inputs[0].suffix:
            out = f.read_text(encoding="utf-8").splitlines(keepends=True)
            sys.stdout.writelines(difflib.unified_diff(src, out, "input", f.name))
        else:
            sys.stdout.write(f.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="+", help="fixture directories under tests/fixtures/rules")
    ap.add_argument("--accept", action="store_true", help="record the expected files as reviewed")
    args = ap.parse_args(argv)
    entries = read_reviewed()
    for name in args.cases:
        case = FIXTURES / name
        if not case.is_dir():
            print(f"review_fixture: no fixture {name} under {FIXTURES}", file=sys.stderr)
            return 2
        if not args.accept:
            show(case)
            continue
        for f in expected_files(case):
            entries[f.relative_to(FIXTURES).as_posix()] = digest(f)
    if args.accept:
        write_reviewed(entries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
