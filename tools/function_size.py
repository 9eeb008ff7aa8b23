#!/usr/bin/env python3
"""Measures the length of every C++ function in src/ and fails on one longer than the limit.

    tools/function_size.py            # every function over the limit, longest first
    tools/function_size.py --check    # the same, exit status 1 when there is one
    tools/function_size.py --top 20   # the 20 longest functions, whatever their length

A function's length is the number of lines from the line of its name to its closing brace, both
included (lambdas count as part of the function that holds them). The scanner is a small one,
not a C++ parser: comments, string and character literals (raw strings too) are blanked out,
then a `{` at namespace or class level whose header (the text since the previous `;`, `{` or `}`
of that level) has a parameter list and no top-level `=` opens a function body.

Functions named in ALLOWED may stay over the limit for now; each entry says why. The list only
shrinks: an entry whose function is back under the limit fails the check too.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 150
# "path:function" -> why it is still over the limit.
ALLOWED: dict[str, str] = {}


@dataclass
class Function:
    path: str
    name: str
    line: int
    lines: int


def blank_literals(src: str) -> str:
    """`src` with comments and literals replaced by spaces (newlines kept, so lines still count)."""
    out = []
    i, n = 0, len(src)

    def keep_newlines(s: str) -> str:
        return "".join(c if c == "\n" else " " for c in s)

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(keep_newlines(src[i:j]))
            i = j
        elif (
            c == "R"
            and src.startswith('R"', i)
            and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_"))
        ):
            m = re.match(r'R"([^()\\ ]{0,16})\(', src[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = src.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append('""' + keep_newlines(src[i + 2 : j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and src[i - 1].isalnum():  # a digit separator: 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_preprocessor(src: str) -> str:
    """Preprocessor lines (with their continuations) blanked out."""
    lines = src.split("\n")
    out, cont = [], False
    for line in lines:
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def top_level_equals(header: str) -> bool:
    depth = 0
    for k, c in enumerate(header):
        if c in "([<":
            depth += 1
        elif c in ")]>":
            depth = max(0, depth - 1)
        elif c == "=" and depth == 0:
            before = header[max(0, k - 8) : k]
            after = header[k + 1 : k + 2]
            if before.endswith("operator") or after == "=" or header[k - 1 : k] in "!<>=":
                continue
            return True
    return False


def function_name(header: str) -> str:
    depth = 0
    for k in range(len(header) - 1, -1, -1):
        c = header[k]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                m = re.search(r"([~\w:]+(?:operator\s*\S+?)?)\s*$", header[:k])
                if m:
                    return m.group(1)
    return "?"


def functions(path: Path, rel: str) -> list[Function]:
    src = strip_preprocessor(blank_literals(path.read_text(encoding="utf-8")))
    found: list[Function] = []
    # The stack of open braces: "scope" (namespace, class, extern, an initializer at namespace
    # level) or "function" (with its start).
    stack: list[tuple[str, int, str]] = []
    header_start = 0
    for i, c in enumerate(src):
        if c == "{":
            inside_function = any(kind == "function" for kind, _, _ in stack)
            header = src[header_start:i]
            is_function = (
                not inside_function
                and ")" in header
                and not re.search(r"\b(namespace|class|struct|enum|union)\b", header.split("(")[0])
                and not top_level_equals(header.split("(")[0])
            )
            if is_function:
                text = header.lstrip()
                start = header_start + (len(header) - len(text))
                stack.append(("function", start, function_name(header)))
            else:
                stack.append(("scope", i, ""))
            header_start = i + 1
        elif c == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "function":
                    first = src.count("\n", 0, start) + 1
                    last = src.count("\n", 0, i) + 1
                    found.append(Function(rel, name, first, last - first + 1))
            header_start = i + 1
        elif c == ";":
            header_start = i + 1
    return found


def scan(root: Path) -> list[Function]:
    out: list[Function] = []
    for path in sorted((root / "src").rglob("*")):
        if path.suffix in (".cc", ".h", ".cpp", ".hpp") and path.is_file():
            out.extend(functions(path, path.relative_to(root).as_posix()))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 on a function over the limit")
    parser.add_argument("--limit", type=int, default=LIMIT)
    parser.add_argument("--top", type=int, default=0, help="list the N longest functions")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    funcs = sorted(scan(args.root), key=lambda f: -f.lines)
    if args.top:
        for f in funcs[: args.top]:
            print(f"{f.lines:5d}  {f.path}:{f.line}  {f.name}")
        return 0
    over = [f for f in funcs if f.lines > args.limit]
    failed = False
    for f in over:
        key = f"{f.path}:{f.name}"
        why = ALLOWED.get(key)
        print(f"{f.lines:5d}  {f.path}:{f.line}  {f.name}" + (f"  (allowed: {why})" if why else ""))
        failed |= why is None
    over_keys = {f"{f.path}:{f.name}" for f in over}
    for key in sorted(set(ALLOWED) - over_keys):
        print(f"stale entry in ALLOWED (now within {args.limit} lines, or gone): {key}")
        failed = True
    if args.check and failed:
        print(
            f"functions longer than {args.limit} lines: split them (tools/function_size.py)", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
