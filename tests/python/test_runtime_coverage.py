"""Every row of the coverage table (data/runtime/coverage.json) that has a call, run as a user writes it under
`torchport run --target cpu`, and under `torchport rehearse --target T -m torchport run --target T` for the
vendor targets npu and mlu. All rows of a target run in one subprocess (torch starts once). Each row states in
its `returns` cells what the call gives on each target (docs/runtime.md, "What each call returns": a value, a
type, a device, a dtype, a relation, or the exception of a refusal); the child checks every cell where the
value lives (tests/python/coverage_values.py) and each test asserts its row's verdict. A row with a call but
no cell for a target fails; a refusal must also name the target and be logged `mismatch`."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any, Optional

import pytest

import coverage_values
from runtime_testlib import run_torchport

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
COVERAGE = json.loads((ROOT / "data" / "runtime" / "coverage.json").read_text(encoding="utf-8"))
ROWS = COVERAGE["rows"]
STATUSES = ("redirected", "emulated", "refused", "n/a")
REHEARSED = ("npu", "mlu")  # the vendor targets whose rehearsal runs every row


def cell(row: dict[str, Any], target: str) -> Optional[str]:
    """What the row states the call returns on `target`: its own cell, else on a rehearsed vendor target
    the `rehearsed` cell."""
    returns = row.get("returns") or {}
    got = returns.get(target)
    if got is None and target != "cpu":
        got = returns.get("rehearsed")
    return got


PRELUDE = """
import io, json, sys, tempfile, traceback
sys.path.insert(0, sys.argv[3])
import coverage_values
import torch
import torch.utils.data
import torch.utils._triton
import torch.cuda.amp.common
import torchport.runtime as rt
x = torch.ones(2)
_b = io.BytesIO()
torch.save(torch.ones(2), _b)
buf = _b.getvalue()


def _scripted_cuda(a: torch.Tensor) -> torch.Tensor:
    return a + torch.ones(2, device="cuda")


ROWS = json.loads(open(sys.argv[1]).read())
TARGET = sys.argv[2]
from torchport._versions import parse
out = {}
for i, row in enumerate(ROWS):
    call = row["call"]
    if not call:
        continue
    if "since" in row and parse(torch.__version__) < parse(row["since"]):  # a later torch's name
        name = row["api"][len("torch.cuda."):]
        out[row["api"]] = {"absent": not hasattr(torch.cuda, name), "torch": torch.__version__}
        continue
    value, error = None, None
    try:
        value = coverage_values.run(call, globals(), f"<row {i}>")
    except Exception as e:
        error = e
    stated = row["cell"]
    try:
        verdict = "no value stated"
        if stated:
            verdict = coverage_values.check(stated, TARGET, value, error, globals())
    except Exception as e:
        verdict = f"the cell {stated!r} cannot be checked: {type(e).__name__}: {e}"
    said = None if error is None else f"{type(error).__name__}: {error}"
    out[row["api"]] = {"verdict": verdict, "error": said}
    del value, error
from torchport.runtime._untouched import untouched_cuda_names
out["<untouched>"] = untouched_cuda_names()
print("RESULTS=" + json.dumps(out))
"""


def _run_rows(d: Path, target: str) -> dict[str, Any]:
    script = d / "rows.py"
    script.write_text(textwrap.dedent(PRELUDE), encoding="utf-8")
    rows = d / "rows.json"
    rows.write_text(json.dumps([{**r, "cell": cell(r, target)} for r in ROWS]), encoding="utf-8")
    log = d / "run.log"
    run = ["run", "--target", target, "--quiet", "--log", str(log), str(script), str(rows), target, str(HERE)]
    if target != "cpu":
        run = ["rehearse", "--target", target, "-m", "torchport", *run]
    proc = run_torchport(run, cwd=d)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS=")]
    assert lines, proc.stdout[-2000:] + proc.stderr[-4000:]
    res: dict[str, Any] = json.loads(lines[0][len("RESULTS=") :])
    res["<log>"] = log.read_text(encoding="utf-8")
    return res


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run_rows(tmp_path_factory.mktemp("coverage"), "cpu")


def test_table_is_well_formed() -> None:
    assert len(ROWS) >= 96
    apis = [r["api"] for r in ROWS]
    assert len(apis) == len(set(apis)), "duplicate rows"
    for r in ROWS:
        status = r["cpu"].split(":", 1)[0]
        assert status in STATUSES, r
        assert ":" in r["cpu"] and r["cpu"].split(":", 1)[1].strip(), f"{r['api']}: say how / why"
        assert r["device"], r
        if not r["call"] and status != "n/a":
            assert (ROOT / r.get("tested_by", "-")).is_file(), f"{r['api']}: no call and no tested_by"


def test_every_row_with_a_call_states_its_value_on_every_target_it_runs_on() -> None:
    # the vocabulary is tests/python/coverage_values.py's; a cell outside it, or a missing one, fails here
    wrong = []
    for r in ROWS:
        returns = r.get("returns")
        if not r["call"]:
            assert returns is None, f"{r['api']}: a value without a call to check it"
            continue
        assert isinstance(returns, dict) and set(returns) <= {"cpu", "rehearsed", *REHEARSED}, r["api"]
        for target in ("cpu", *REHEARSED):
            stated = cell(r, target)
            if stated is None:
                wrong.append(f"{r['api']}: no value stated for {target}")
                continue
            try:
                coverage_values.parse(stated)
            except (ValueError, SyntaxError) as e:
                wrong.append(f"{r['api']} on {target}: {e}")
        refusal = str(returns["cpu"]).startswith("raises: NotImplementedError:")
        if r["cpu"].startswith("refused") and not refusal:
            wrong.append(f"{r['api']}: refused on cpu, so its cpu value is a NotImplementedError")
    assert not wrong, "\n".join(wrong)


def test_every_public_torch_cuda_name_has_a_row() -> None:
    import torch

    covered = {r["api"].split(" ")[0] for r in ROWS}
    missing = [n for n in torch.cuda.__all__ if f"torch.cuda.{n}" not in covered]
    assert not missing, f"torch.cuda names without a coverage row: {missing}"


def test_no_cuda_original_left_in_place(outcomes: dict[str, Any]) -> None:
    assert outcomes["<untouched>"] == []


def test_rows_since_a_torch_release_name_torch_cuda_names_of_that_release() -> None:
    # a row's `since` is the release that added the name: present from there on, absent before (the absent
    # side is checked by the row tests under an older torch)
    import torch

    from torchport._versions import parse

    since = [r for r in ROWS if "since" in r]
    assert since
    for r in since:
        assert r["api"].startswith("torch.cuda."), r
        name = r["api"][len("torch.cuda.") :].split(" ")[0]
        present = parse(torch.__version__) >= parse(r["since"])
        assert (name in torch.cuda.__all__) == present, (r["api"], r["since"], torch.__version__)


@pytest.mark.parametrize("row", [r for r in ROWS if r["call"]], ids=lambda r: r["api"])
def test_row_under_run_target_cpu(row: dict[str, Any], outcomes: dict[str, Any]) -> None:
    got = outcomes[row["api"]]
    if "absent" in got:  # a row for a newer torch: its name must be absent from this one
        assert got["absent"], f"{row['api']} is in torch {got['torch']}; the row says since {row['since']}"
        return
    assert got["verdict"] is None, f"{row['call']}: {got['verdict']}"
    if row["cpu"].startswith("refused"):
        detail = got["error"]
        assert "target cpu" in detail and "[torchport]" in detail, detail
        name = row["api"].rsplit(".", 1)[-1]
        assert f"[mismatch] {row['api']}" in outcomes["<log>"] or f"{name}" in outcomes["<log>"], detail


def test_docs_table_is_generated_from_the_data() -> None:
    import subprocess
    import sys

    p = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_runtime_coverage.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("target", ["xpu", "mps"])
def test_table_cells_match_the_runtime_on_in_tree_accelerators(target: str) -> None:
    # without their hardware (check=False): the runtime's choice per torch.cuda function equals the generated
    # table's cell (device_names.json says which names the device module has)
    import torch

    from runtime_testlib import enabled
    from torchport.runtime import _cuda_ns

    # The runtime asks the installed torch's device module; the generated table (device_names.json) was read
    # from one torch release: it must agree with the installed torch when that is the same release.
    data = json.loads((ROOT / "data" / "runtime" / "device_names.json").read_text(encoding="utf-8"))
    names = data["names"]
    same_release = torch.__version__.split("+")[0] == data["torch"]
    rules = {r["api"]: r["device"] for r in ROWS}
    checked = 0
    with enabled(target, check=False) as s:
        for name in _cuda_ns.FUNCTIONS:
            if not hasattr(torch.cuda, name) or rules.get(f"torch.cuda.{name}") != "same-name":
                continue
            _, cls, _, shown = _cuda_ns.resolve(s, name)
            has = hasattr(getattr(torch, target), name)
            assert (shown == f"torch.{target}.{name}") == has, (name, shown, cls)
            if same_release:
                stale = "stale: tools/gen_runtime_coverage.py --refresh-device-names"
                assert has == (name in names[target]), (name, stale)
            checked += 1
    assert checked > 40


@pytest.fixture(scope="module", params=REHEARSED)
def rehearsed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any]:
    target = str(request.param)
    return target, _run_rows(tmp_path_factory.mktemp(f"coverage_{target}"), target)


def test_every_row_under_run_on_a_rehearsed_vendor_target(rehearsed: tuple[str, Any]) -> None:
    """Every row with a call gives what its cell for the target states (a refusal by torchport names the
    target); no error names CUDA."""
    target, res = rehearsed
    assert res["<untouched>"] == []
    wrong = []
    for row in ROWS:
        if not row["call"]:
            continue
        got = res[row["api"]]
        if "absent" in got:  # a row for a newer torch: its name must be absent from this one
            if not got["absent"]:
                wrong.append(f"{row['api']}: in torch {got['torch']}, but the row says since {row['since']}")
            continue
        if got["verdict"] is not None:
            wrong.append(f"{row['api']} on {target}: {got['verdict']}")
        error = got["error"] or ""
        if "[torchport]" in error and f"target {target}" not in error:
            wrong.append(f"{row['api']}: a refusal that does not name target {target}: {error}")
        if re.search(r"not compiled with CUDA|CUDA driver|device='cuda|'cuda:\d", error):
            wrong.append(f"{row['api']}: the error names CUDA: {error}")
    assert not wrong, "\n".join(wrong)
