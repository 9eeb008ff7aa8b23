#!/usr/bin/env python3
"""Checks that every rule code has one producer (issue 32 §2: a rule is a code).

    python tools/rule_codes.py        # prints each violation; exit 1 when there is one

The rules are the C++ files of src/torchport/rules/ (not the *_test.cc files). The check:

1. Every code of the registry (engine.cc's kRegistry) has exactly one producer: a function named
   after the code in lower case (`tp100`), defined in its family's file (`<family>.cc`, the
   registry row's family). The producer is the one place a finding of that code is made.
2. A code's literal ("TP100", with the quotes) appears only in
   - its registry row, and in engine.cc's table of incidental changes (kIncidental), and
   - the body of its producer, once;
   anywhere else, only as a read of another finding's code (`f.code == "TP960"`) at a place
   listed in READS. Comments do not count.
3. A finding is made once, complete, by its producer: outside the producers, no code assigns a
   finding's code (`x.code = ...`), builds a Finding by aggregate (`Finding{...}`), calls
   `finding(...)` (engine.cc's constructor of a finding from a draft, which the producers call),
   or changes the last finding made (`findings.back()`).
4. No rule removes, reorders or edits the findings already made: a finding declares what its fix
   takes over (engine.h: Finding::drops, takes, opens_arguments), and resolve.cc, called by
   check() after each family, is the one place that acts on it.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULES = Path("src") / "torchport" / "rules"

# The reads of a finding's code outside its producer, (file, code). A rule reads what a code
# declares (engine.h: RuleInfo::subject, renames_in_place), never another family's code; the one
# read left is a family's own code.
READS = {
    ("other_files.cc", "TP902"),  # its own: a requirement two scans found
}

CODE = re.compile(r'"(TP\d{3})"')
PRODUCER = re.compile(r"^(?:void|Finding) (tp\d{3})\(.*\{")
# engine.cc's constructor of a finding from a code and a draft, which the producers call.
CONSTRUCTOR = re.compile(r"^(?:Finding finding\(|void Context::add\(std::string_view code)")
# A change to the findings already made (removed, reordered, edited in place) outside the one
# place that resolves what findings declare (resolve.cc) and check() itself (engine.cc).
RESOLVERS = {"engine.cc", "resolve.cc"}
CHANGES_OTHERS = [
    re.compile(r"\b(?:erase_if|remove_if|rotate|sort|stable_sort|swap)\([^;]*\bresult\.findings"),
    re.compile(r"\bresult\.findings\.(?:erase|pop_back|clear|insert|emplace|resize)\("),
    re.compile(r"for \((?:auto|Finding)\s*&\s*\w+\s*:\s*\w+\.result\.findings"),
]
# A finding made outside a producer.
MAKES = [
    re.compile(r"\.code\s*=[^=]"),
    re.compile(r"(?<!struct )\bFinding\s*\{"),
    re.compile(r"(?<![\w.:>])finding\("),
    re.compile(r"findings\.back\(\)"),  # a finding completed after it was made
]


@dataclass
class Problem:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def strip_comment(line: str) -> str:
    """The line without its // comment (a // inside a string literal stays)."""
    out, quote, i = [], "", 0
    while i < len(line):
        c = line[i]
        if quote:
            out.append(c)
            if c == "\\" and i + 1 < len(line):
                out.append(line[i + 1])
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
            out.append(c)
        elif line.startswith("//", i):
            break
        else:
            out.append(c)
        i += 1
    return "".join(out)


def registry(engine: str) -> dict[str, str]:
    """code -> family, from kRegistry's rows."""
    table = engine[engine.index("kRegistry[] = {") : engine.index("// tools/new_rule.py: registry")]
    rows: dict[str, str] = {}
    for m in re.finditer(r'\{"(TP\d{3})",(.*?)\},\n', table, re.S):
        literals = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(2))
        rows[m.group(1)] = literals[-1]
    return rows


def table_lines(lines: list[str], start: str) -> range:
    """The line numbers (0-based) of the C++ table whose definition line contains `start`."""
    first = next(i for i, line in enumerate(lines) if start in line)
    last = next(i for i in range(first, len(lines)) if lines[i].startswith("};"))
    return range(first, last + 1)


def function_spans(lines: list[str], start: re.Pattern[str] = PRODUCER) -> dict[int, str]:
    """0-based line -> the producer whose body it is in (a producer is a top-level function:
    its definition starts at column 0 and its body ends at a line `}` at column 0, or on the
    same line)."""
    inside: dict[int, str] = {}
    i = 0
    while i < len(lines):
        m = start.match(lines[i])
        if not m:
            i += 1
            continue
        j = i
        if not lines[i].rstrip().endswith("}"):  # a body of several lines, up to its `}`
            while j + 1 < len(lines) and lines[j] != "}":
                j += 1
        for k in range(i, j + 1):
            inside[k] = m.group(1) if m.groups() else m.group(0)
        i = j + 1
    return inside


def check(root: Path) -> list[Problem]:
    rules = root / RULES
    engine_text = (rules / "engine.cc").read_text(encoding="utf-8")
    families = registry(engine_text)
    problems: list[Problem] = []
    producers: dict[str, list[tuple[str, int]]] = {}
    uses: dict[str, int] = {}
    for path in sorted(rules.glob("*.cc")) + sorted(rules.glob("*.h")):
        if path.name.endswith("_test.cc"):
            continue
        rel = str(path.relative_to(root))
        lines = path.read_text(encoding="utf-8").splitlines()
        owner = function_spans(lines)
        tables: set[int] = set()
        constructor = function_spans(lines, CONSTRUCTOR) if path.name == "engine.cc" else {}
        if path.name == "engine.cc":
            tables = set(table_lines(lines, "kRegistry[] = {")) | set(table_lines(lines, "kIncidental[] = {"))
        for i, raw in enumerate(lines):
            line = strip_comment(raw)
            if m := PRODUCER.match(line):
                producers.setdefault(m.group(1).upper(), []).append((path.name, i + 1))
            for m in CODE.finditer(line):
                code = m.group(1)
                if i in tables:
                    continue
                if owner.get(i) == code.lower():
                    uses[code] = uses.get(code, 0) + 1
                    continue
                if re.search(r'==\s*"' + code + '"', line) and (path.name, code) in READS:
                    continue
                problems.append(
                    Problem(rel, i + 1, f"{code} outside its producer {code.lower()}() and the registry")
                )
            if path.name not in RESOLVERS and any(p.search(line) for p in CHANGES_OTHERS):
                problems.append(Problem(rel, i + 1, "findings already made changed outside resolve.cc"))
            if owner.get(i) is None and i not in constructor and any(p.search(line) for p in MAKES):
                if re.match(r"Finding finding\(.*\);$", line):  # its declaration (context.h)
                    continue
                problems.append(Problem(rel, i + 1, "a finding made or changed outside its code's producer"))
    for code, family in families.items():
        found = producers.get(code, [])
        if len(found) != 1:
            where = ", ".join(f"{f}:{n}" for f, n in found) or "none"
            problems.append(Problem(str(RULES / "engine.cc"), 0, f"{code}: {len(found)} producers ({where})"))
        elif found[0][0] != f"{family}.cc":
            problems.append(
                Problem(
                    str(RULES / found[0][0]),
                    found[0][1],
                    f"{code}'s producer is not in its family's file {family}.cc",
                )
            )
        if uses.get(code, 0) != 1 and len(found) == 1:
            problems.append(
                Problem(
                    str(RULES / found[0][0]),
                    found[0][1],
                    f"{code}: its producer names it {uses.get(code, 0)} times",
                )
            )
    for code in sorted(set(producers) - set(families)):
        f, n = producers[code][0]
        problems.append(Problem(str(RULES / f), n, f"{code.lower()}() produces an unregistered code"))
    return problems


def main() -> int:
    problems = check(ROOT)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
