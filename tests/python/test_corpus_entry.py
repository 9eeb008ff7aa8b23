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
VENDOR_TABLE = json.loads(entry.VENDOR_JSON.read_text())
VENDOR_COMMITTED = {(r["project"], r["name"]): r for r in VENDOR_TABLE["results"]}
# The vendor's torch_npu, installed for the rehearsal by .ci/run (tools/gen_vendor_npu_core.py --install).
VENDOR_DIR = Path(os.environ.get("TORCHPORT_VENDOR_TORCH_NPU") or static.REPO / "build" / "vendor-torch-npu")


def test_table_lists_every_harness() -> None:
    assert set(COMMITTED) == {(h.project, h.name) for h in entry.HARNESSES}
    md = static.FIDELITY_MD.read_text()
    assert entry.markdown(list(COMMITTED.values())) in md


def test_vendor_table_lists_every_harness() -> None:
    assert set(VENDOR_COMMITTED) == {(h.project, h.name) for h in entry.HARNESSES}
    md = static.FIDELITY_MD.read_text()
    assert entry.vendor_markdown(VENDOR_TABLE["results"], VENDOR_TABLE["torch_npu"]) in md


def test_vendor_losses_verdicts() -> None:
    """The rule of the vendor table's "same losses" column, on made-up runs."""
    h = next(h for h in entry.HARNESSES if h.project == "karpathy__makemore")
    ok = {"status": "pass", "losses": [[0, 3.0], [10, 2.5]]}

    def result(cpu: dict, vendor: dict) -> dict:
        return {"runs": {"cpu": cpu, entry.VENDOR: vendor}}

    assert entry.vendor_losses(h, result(ok, dict(ok)))["verdict"] == "same"
    off = {"status": "pass", "losses": [[0, 3.0], [10, 2.4]]}
    v = entry.vendor_losses(h, result(ok, off))
    assert v["verdict"] == "NO" and v["max_rel"] == pytest.approx(0.04)
    assert entry.vendor_losses(h, result(ok, {"status": "pass", "losses": [[0, 3.0]]}))["verdict"] == "NO"
    failed = {"status": "fail", "losses": []}
    assert entry.vendor_losses(h, result(ok, failed))["verdict"] == "n/a"
    assert entry.vendor_losses(h, result(failed, ok))["verdict"] == "n/a"


def test_vendor_table_cells() -> None:
    h = next(h for h in entry.HARNESSES if h.project == "karpathy__makemore")
    ok = {"status": "pass", "seconds": 20.0, "first_error": "", "losses": [[0, 3.0], [10, 2.5]]}
    off = dict(ok, losses=[[0, 3.0], [10, 2.4]])
    failed = {"status": "fail", "seconds": 3.0, "first_error": "exit 1: RuntimeError: x", "losses": []}

    def row(cpu: dict, vendor: dict) -> str:
        r = {"project": h.project, "name": h.name, "skip": None, "runs": {"cpu": cpu, entry.VENDOR: vendor}}
        return entry.vendor_markdown([r], "2.13.0").splitlines()[2]

    assert row(ok, ok).endswith("| pass (20 s) | 0: 3.0, 10: 2.5 | pass (20 s) | 0: 3.0, 10: 2.5 | yes |")
    assert row(ok, off).endswith("| 0: 3.0, 10: 2.4 | **NO** (max 4.0e-02 relative) |")
    assert row(ok, failed).endswith("| **FAIL** (3 s): `exit 1: RuntimeError: x` |  | n/a |")


def _ci_modes() -> tuple[str, ...]:
    if os.environ.get("TORCHPORT_CORPUS_ALL") == "1":
        return entry.MODES
    return ("original", "cpu", "accelerator", *entry.CI_REHEARSED)


def test_rehearsed_losses_verdicts() -> None:
    """The rule of the "rehearsed losses" column, on made-up runs."""
    h = next(h for h in entry.HARNESSES if h.project == "karpathy__makemore")
    ok = {"status": "pass", "losses": [[0, 3.0], [10, 2.5]]}

    def result(original: dict, npu: dict) -> dict:
        return {"runs": {"original": original, "cpu": ok, "npu": npu}}

    same = entry.rehearse_losses(h, result(ok, dict(ok)), "npu")
    assert (same["verdict"], same["reference"], same["max_rel"]) == ("same", "original", 0.0)
    off = {"status": "pass", "losses": [[0, 3.0], [10, 2.4]]}
    assert entry.rehearse_losses(h, result(ok, off), "npu")["verdict"] == "NO"
    fewer = {"status": "pass", "losses": [[0, 3.0]]}
    assert entry.rehearse_losses(h, result(ok, fewer), "npu")["verdict"] == "NO"
    # the original failed: the reference is the migrated cpu run
    failed = {"status": "fail", "losses": []}
    assert entry.rehearse_losses(h, result(failed, dict(ok)), "npu")["reference"] == "cpu"
    assert entry.rehearse_losses(h, result(ok, failed), "npu")["verdict"] == "n/a"
    # a declared device reason admits a difference within its bound, and only that
    key = (h.project, h.name, "npu")
    saved = dict(entry.REHEARSE_DIFFERS)
    try:
        entry.REHEARSE_DIFFERS[key] = ("made up", 0.05)
        assert entry.rehearse_losses(h, result(ok, off), "npu")["verdict"] == "differs"
        entry.REHEARSE_DIFFERS[key] = ("made up", 0.01)
        assert entry.rehearse_losses(h, result(ok, off), "npu")["verdict"] == "NO"
    finally:
        entry.REHEARSE_DIFFERS.clear()
        entry.REHEARSE_DIFFERS.update(saved)


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
    modes = _ci_modes()
    now = entry.run_harness(h, CORPUS, modes)
    worse, better = [], []
    for mode in modes:
        a, b = was["runs"].get(mode, {"status": "not run"}), now["runs"][mode]
        if a["status"] == "pass" and b["status"] != "pass":
            worse.append(f"{h.key} [{mode}]: passed, now {b['status']}: {b['first_error']}")
        elif a["status"] != "pass" and b["status"] == "pass":
            better.append(f"{h.key} [{mode}]: {a['status']}, now passes")
    if was["losses_match"] is True and now["losses_match"] is not True:
        o, c = now["runs"]["original"], now["runs"]["cpu"]
        worse.append(
            f"{h.key}: original and migrated cpu losses no longer match: {o['losses']} vs {c['losses']}"
        )
    for t in (m for m in modes if m in entry.REHEARSED):
        v_was, v_now = entry.rehearse_losses(h, was, t), entry.rehearse_losses(h, now, t)
        if now["runs"][t]["status"] != "pass":
            continue  # counted above when it passed before
        ref = v_now["reference"]
        got = f"{now['runs'][ref]['losses'] if ref else []} vs {now['runs'][t]['losses']}"
        if (h.project, h.name, t) in entry.REHEARSE_DIFFERS and v_now["verdict"] != "differs":
            # the device reason must still show, and within its measured bound
            worse.append(f"{h.key} [{t}]: expected to differ within its bound, got {v_now['verdict']}: {got}")
        elif v_was["verdict"] in ("same", "differs") and v_now["verdict"] not in ("same", "differs"):
            worse.append(f"{h.key} [{t}]: rehearsed losses no longer match the {ref} run: {got}")
    if better and not worse:
        warnings.warn(
            "\n".join(better) + "\nrun `python -m tests.corpus --entry-only --update`", stacklevel=1
        )
    assert not worse, "\n".join(worse)


@pytest.mark.parametrize("h", entry.HARNESSES, ids=lambda h: h.key)
def test_entry_script_on_the_vendors_torch_npu(h: entry.Harness) -> None:
    """The npu migration on the vendor's torch_npu (docs/fidelity.md, "The vendor's torch_npu"): a run that
    passed in docs/fidelity-entry-vendor-npu.json must still pass, with the committed migrated cpu run's
    losses where it had them (the cpu run itself is test_entry_script_no_worse's)."""
    if h.skip:
        pytest.skip(h.skip)
    if os.environ.get("TORCHPORT_CORPUS_ALL") != "1" and h.project not in entry.CI_VENDOR:
        pytest.skip(
            f"CI runs the vendor's package for {', '.join(entry.CI_VENDOR)}: TORCHPORT_CORPUS_ALL=1 runs it"
        )
    if os.environ.get("TORCHPORT_CORPUS_ALL") != "1" and not h.ci:
        pytest.skip("longest harness, outside CI's time budget: TORCHPORT_CORPUS_ALL=1 runs it")
    if CORPUS is None:
        pytest.skip("corpus not found: set TORCHPORT_CORPUS or put it at ../shared/corpus")
    if not entry.DEPS.is_dir():
        pytest.skip(f"{entry.DEPS} missing: run tools/setup.sh --test (tests/corpus/requirements.txt)")
    if not (VENDOR_DIR / "torch_npu" / "__init__.py").is_file():
        pytest.skip(
            f"no vendor torch_npu in {VENDOR_DIR}: tools/gen_vendor_npu_core.py --install DIR (.ci/run does)"
        )
    was = VENDOR_COMMITTED[(h.project, h.name)]
    now = entry.run_harness(h, CORPUS, (entry.VENDOR,), vendor=VENDOR_DIR)
    run = now["runs"][entry.VENDOR]
    if was["runs"][entry.VENDOR]["status"] == "pass":
        assert run["status"] == "pass", f"{h.key}: passed on the vendor's torch_npu, now {run['first_error']}"
    if entry.vendor_losses(h, was)["verdict"] == "same":
        assert run["losses"] == was["runs"]["cpu"]["losses"], "not the migrated cpu run's losses"
