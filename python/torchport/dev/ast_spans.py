"""The oracle side of the parser conformance harness: node spans from CPython's own `ast`.

This file imports nothing from torchport so that it can run under any Python 3.8+ interpreter:
`python ast_spans.py < list-of-paths` prints one JSON object per file, in the format of
`torchport dev dump-spans`.
"""

from __future__ import annotations

import ast
import json
import sys
import warnings
from typing import Any, Iterable, Iterator, List, Optional, Tuple

# ast classes whose spans are compared (see docs/parser.md).
POSITIONED_KINDS = frozenset(
    {
        "Call",
        "Attribute",
        "Name",
        "Constant",
        "Import",
        "ImportFrom",
        "alias",
        "FunctionDef",
        "AsyncFunctionDef",
        "ClassDef",
        "Assign",
        "AnnAssign",
        "AugAssign",
        "With",
        "AsyncWith",
        "For",
        "AsyncFor",
        "Lambda",
        "Subscript",
        "keyword",
        "Compare",
        "JoinedStr",
    }
)
# Literal values whose Constant nodes are compared (not None/True/False/Ellipsis).
LITERAL_TYPES = (str, bytes, int, float, complex)

Span = Tuple[str, int, int, int, int]


def _span(kind: str, first: ast.AST, last: ast.AST) -> Span:
    return (
        kind,
        first.lineno,  # type: ignore[attr-defined]
        first.col_offset,  # type: ignore[attr-defined]
        last.end_lineno,  # type: ignore[attr-defined]
        last.end_col_offset,  # type: ignore[attr-defined]
    )


def spans(tree: ast.AST) -> List[Span]:
    """Every compared node of `tree` as (kind, lineno, col, end_lineno, end_col)."""
    # Literal parts of f-strings and the JoinedStr of a format spec are not user-visible literals
    # (and CPython before 3.12 gives them the span of the whole f-string), so they are skipped.
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            for value in node.values:
                if isinstance(value, ast.Constant):
                    skipped.add(id(value))
        elif isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            skipped.add(id(node.format_spec))
            for value in getattr(node.format_spec, "values", []):
                if isinstance(value, ast.Constant):
                    skipped.add(id(value))
    out: List[Span] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        kind = type(node).__name__
        if kind in POSITIONED_KINDS:
            if kind == "Constant" and type(node.value) not in LITERAL_TYPES:  # type: ignore[attr-defined]
                continue
            out.append(_span(kind, node, node))
        elif kind == "withitem":
            last = node.optional_vars or node.context_expr  # type: ignore[attr-defined]
            out.append(_span(kind, node.context_expr, last))  # type: ignore[attr-defined]
        elif kind == "match_case":
            out.append(_span(kind, node.pattern, node.body[-1]))  # type: ignore[attr-defined]
    return out


def dump_file(path: str) -> dict[str, Any]:
    """The oracle's record for one file: accepted with its spans, or rejected with the error."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return {"path": path, "ok": False, "error": {"line": 0, "col": 0, "message": str(e)}}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(data, filename=path)
    except SyntaxError as e:
        line = e.lineno or 0
        col = (e.offset or 1) - 1
        return {"path": path, "ok": False, "error": {"line": line, "col": col, "message": e.msg}}
    except (ValueError, RecursionError, MemoryError, UnicodeDecodeError) as e:
        return {"path": path, "ok": False, "error": {"line": 0, "col": 0, "message": str(e)}}
    return {"path": path, "ok": True, "nodes": [list(s) for s in spans(tree)]}


def dump_files(paths: Iterable[str]) -> Iterator[dict[str, Any]]:
    for path in paths:
        yield dump_file(path)


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    paths = args if args else [line.rstrip("\n") for line in sys.stdin if line.strip()]
    out = sys.stdout
    for record in dump_files(paths):
        out.write(json.dumps(record))
        out.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
