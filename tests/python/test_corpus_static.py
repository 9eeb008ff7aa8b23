"""The corpus ratchet: `torchport migrate` over every project of ../shared/corpus x every target,
judged by `ast` and the oracle, must be no worse in any cell than docs/fidelity.json.

Same code as `python -m tests.corpus` (tests/corpus/static.py). A cell that gets worse fails with
the project, the target, file:line and the reason; a cell that gets better passes with a warning
that asks for `python -m tests.corpus --update`."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.corpus import static  # noqa: E402

CORPUS = static.corpus_dir()
needs_corpus = pytest.mark.skipif(
    CORPUS is None, reason="corpus not found: set TORCHPORT_CORPUS or put it at ../shared/corpus"
)


def committed() -> dict:
    return json.loads(static.FIDELITY_JSON.read_text())


def test_markdown_table_matches_the_json() -> None:
    """docs/fidelity.md's table is the one generated from docs/fidelity.json (no hand edits)."""
    data = committed()
    cells = []
    for key, v in data["cells"].items():
        project, target = key.split("/")
        c = static.Cell(
            project, target, **{k: v[k] for k in ("files", "changed", "refs", "left", *static.RATCHETED)}
        )
        c.seconds = v["seconds"]
        cells.append(c)
    md = static.FIDELITY_MD.read_text()
    assert static.markdown_table(cells) in md


def test_committed_table_covers_every_target() -> None:
    data = committed()
    targets = {k.split("/")[1] for k in data["cells"]}
    assert targets == set(static.TARGETS)


@needs_corpus
def test_no_cell_gets_worse() -> None:
    assert CORPUS is not None
    cells = static.run_all(CORPUS)
    worse, better = static.compare(committed(), cells)
    if better and not worse:
        warnings.warn(
            "corpus cells improved:\n"
            + "\n".join(better)
            + "\nrun `python -m tests.corpus --update` and commit docs/fidelity.*",
            stacklevel=1,
        )
    assert not worse, "corpus cells got worse than docs/fidelity.json:\n" + "\n".join(worse)


def _cell(**kw: int) -> static.Cell:
    c = static.Cell("proj", "cpu")
    for k, v in kw.items():
        setattr(c, k, v)
    return c


def test_compare_flags_a_worse_cell_with_its_problem() -> None:
    table = {
        "cells": {
            "proj/cpu": {"unflagged": 1, "problems": ["a.py:3: unflagged: cuda-call `x.cuda` (input line 3)"]}
        }
    }
    now = _cell(unflagged=1)
    now.problems.append(static.Problem("unflagged", "a.py", 4, "cuda-call `x.cuda` (input line 3)"))
    assert static.compare(table, [now]) == ([], [])  # the same problem on a moved output line
    now.add("unflagged", "b.py", 7, "device-string `'cuda'` (input line 7) has no report row")
    worse, better = static.compare(table, [now])
    assert better == []
    assert worse[0].splitlines()[0] == "proj cpu: unflagged 1 -> 2"
    assert worse[0].splitlines()[1:] == [
        "  proj cpu b.py:7: unflagged: device-string `'cuda'` (input line 7) has no report row"
    ]


def test_compare_reports_improvements_and_unknown_cells() -> None:
    table = {"cells": {"proj/cpu": {"parse": 2, "unflagged": 0}}}
    worse, better = static.compare(table, [_cell(parse=1)])
    assert (worse, better) == ([], ["proj cpu: parse 2 -> 1"])
    worse, _ = static.compare({"cells": {}}, [_cell()])
    assert worse == ["proj cpu: not in docs/fidelity.json (a new project or target)"]
