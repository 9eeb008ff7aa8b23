"""The corpus entry scripts (tests/corpus/entry.py) against docs/fidelity-entry.json: a run that
passed there must still pass, and where the original and the migrated cpu run printed the same
losses they still must. A run that failed there and passes now is reported as an improvement (a
warning asking for `python -m tests.corpus --entry-only --update`).

Every harness of the table runs here except those the table marks skipped and the two 2-rank runs
(llm.c and torchtitan: the longest, outside CI's time budget; TORCHPORT_CORPUS_ALL=1 runs them).
pytest's summary shows each skip with its reason.
The projects' dependencies come from tests/corpus/requirements.txt in build/corpus-deps
(tools/setup.sh --test installs them)."""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.corpus import entry, static  # noqa: E402

CORPUS = static.corpus_dir()
COMMITTED = {(r["project"], r["name"]): r for r in json.loads(entry.ENTRY_JSON.read_text())}


def test_table_lists_every_harness() -> None:
    assert set(COMMITTED) == {(h.project, h.name) for h in entry.HARNESSES}
    md = static.FIDELITY_MD.read_text()
    assert entry.markdown(list(COMMITTED.values())) in md


@pytest.mark.parametrize("h", entry.HARNESSES, ids=lambda h: h.key)
def test_entry_script_no_worse(h: entry.Harness) -> None:
    if h.skip:
        pytest.skip(h.skip)
    if not h.ci and os.environ.get("TORCHPORT_CORPUS_ALL") != "1":
        pytest.skip("longest harness, outside CI's time budget: TORCHPORT_CORPUS_ALL=1 runs it")
    if CORPUS is None:
        pytest.skip("corpus not found: set TORCHPORT_CORPUS or put it at ../shared/corpus")
    if not entry.DEPS.is_dir():
        pytest.skip(f"{entry.DEPS} missing: run tools/setup.sh --test (tests/corpus/requirements.txt)")
    was = COMMITTED[(h.project, h.name)]
    now = entry.run_harness(h, CORPUS)
    worse, better = [], []
    for mode in entry.MODES:
        a, b = was["runs"][mode], now["runs"][mode]
        if a["status"] == "pass" and b["status"] != "pass":
            worse.append(f"{h.key} [{mode}]: passed, now {b['status']}: {b['first_error']}")
        elif a["status"] != "pass" and b["status"] == "pass":
            better.append(f"{h.key} [{mode}]: failed, now passes")
    if was["losses_match"] is True and now["losses_match"] is not True:
        o, c = now["runs"]["original"], now["runs"]["cpu"]
        worse.append(
            f"{h.key}: original and migrated cpu losses no longer match: {o['losses']} vs {c['losses']}"
        )
    if better and not worse:
        warnings.warn(
            "\n".join(better) + "\nrun `python -m tests.corpus --entry-only --update`", stacklevel=1
        )
    assert not worse, "\n".join(worse)
