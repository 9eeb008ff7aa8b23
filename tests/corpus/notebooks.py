"""Jupyter notebooks for the corpus suite and tests/python/test_notebooks.py, on Python's own `ast`
and nothing of torchport: a notebook's code cells as one Python module (the kernel runs them in
order), with IPython syntax masked line for line, and where each cell begins in it.

The masking follows IPython, independently of torchport's C++ reader (src/torchport/notebook/):
line magics `%`, shell `!`, help `?`, the auto-call escapes `/ , ;`, assignments from `!` / `%`,
backslash continuations of those, automagic (`pip install x`: a line magic's name without its `%`
where what follows cannot continue a Python statement), and cell magics (`%%time` keeps its Python
body; `%%bash`, `%%writefile` and the like are not Python and are left out).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Optional

REPO = Path(__file__).resolve().parents[2]
# The cell magics whose body the kernel runs as Python.
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug", "memit"}
# Line magics IPython runs without their `%` (automagic, on by default), when what follows the
# name cannot continue a Python statement.
AUTOMAGIC = re.compile(
    r"^(pip|conda|mamba|cd|pwd|env|matplotlib|load_ext|time|timeit|run|ls|cat|mkdir|rm|cp|mv)[ \t]+"
    r"(?![!=()<>,+*/%^&|.\[:;#'\"@]|(if|else|and|or|in|is|not|for|lambda|from)\b)\S"
)
ASSIGN_FROM_ESCAPE = re.compile(r"^[\w.]+(\s*,\s*[\w.]+)*\s*=\s*[!%]")


def notebooks_dir() -> Optional[Path]:
    """$TORCHPORT_NOTEBOOKS, else the first `shared/notebooks/huggingface__notebooks` next to the
    repository or one of its parents."""
    env = os.environ.get("TORCHPORT_NOTEBOOKS")
    if env:
        return Path(env) if Path(env).is_dir() else None
    for parent in REPO.parents:
        p = parent / "shared" / "notebooks" / "huggingface__notebooks"
        if p.is_dir():
            return p
    return None


def cell_text(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def mask(src: str) -> Optional[str]:
    """The cell as plain Python, line for line: IPython lines become `pass` (keeping their
    indentation); None for a cell whose magic runs something other than Python (%%bash...)."""
    out: list[str] = []
    first = True
    continued = False
    for line in src.splitlines(keepends=True):
        body = line.lstrip(" \t")
        indent = line[: len(line) - len(body)]
        text = body.rstrip("\r\n")
        if first and text:
            first = False
            if text.startswith("%%"):
                if text[2:].split()[0] not in PYTHON_CELL_MAGICS:
                    return None
                out.append("\n")
                continue
        if (
            continued
            or (text and text[0] in "%!?/,;")
            or AUTOMAGIC.match(text)
            or ASSIGN_FROM_ESCAPE.match(text)
        ):
            out.append(("#" if continued else indent + "pass") + "\n")
            continued = text.endswith("\\")
            continue
        if text.endswith("?") and "#" not in text:
            out.append(indent + "pass\n")
            continue
        out.append(line if line.endswith(("\n", "\r")) else line + "\n")
    return "".join(out)


def module_of(nb: dict[str, Any]) -> tuple[str, dict[int, int]]:
    """The code cells (masked) as one module, and the module line where each cell begins (by the
    cell's 1-based number among all cells, as torchport's reports count them)."""
    text = ""
    first: dict[int, int] = {}
    for n, cell in enumerate(nb.get("cells", []), 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        masked = mask(cell_text(cell))
        if not masked:
            continue
        first[n] = text.count("\n") + 1
        text += masked
    return text, first


def read_module(path: Path) -> tuple[str, dict[int, int]]:
    """module_of() of the notebook at `path`; a file that is not a notebook is its own text."""
    data = path.read_bytes()
    try:
        return module_of(json.loads(data))
    except (ValueError, AttributeError):
        return data.decode("utf-8", errors="replace"), {}
