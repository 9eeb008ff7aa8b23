"""One test per row of the coverage table (data/runtime/coverage.json): the call as a user writes it, run
under `torchport run --target cpu`. All rows run in one subprocess (torch starts once); each test then checks
its own
row's outcome against what the table says: served (redirected / emulated / n/a) or refused with a clear error
naming the target and the call, logged `mismatch`."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from runtime_testlib import run_torchport

ROOT = Path(__file__).resolve().parents[2]
COVERAGE = json.loads((ROOT / "data" / "runtime" / "coverage.json").read_text(encoding="utf-8"))
ROWS = COVERAGE["rows"]
STATUSES = ("redirected", "emulated", "refused", "n/a")

PRELUDE = """
import io, json, sys, tempfile, traceback
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
out = {}
for i, row in enumerate(ROWS):
    call = row["call"]
    if not call:
        continue
    try:
        try:
            code, mode = compile(call, f"<row {i}>", "eval"), "eval"
        except SyntaxError:
            code, mode = compile(call, f"<row {i}>", "exec"), "exec"
        value = eval(code) if mode == "eval" else exec(code)
        out[row["api"]] = ["ok", repr(value)[:80]]
    except NotImplementedError as e:
        out[row["api"]] = ["refused", str(e)]
    except Exception as e:
        out[row["api"]] = ["error", f"{type(e).__name__}: {e}"[:300]]
from torchport.runtime._extras import untouched_cuda_names
out["<untouched>"] = ["ok", json.dumps(untouched_cuda_names())]
print("RESULTS=" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("coverage")
    script = d / "rows.py"
    script.write_text(textwrap.dedent(PRELUDE), encoding="utf-8")
    rows = d / "rows.json"
    rows.write_text(json.dumps(ROWS), encoding="utf-8")
    log = d / "run.log"
    proc = run_torchport(
        ["run", "--target", "cpu", "--quiet", "--log", str(log), str(script), str(rows)], cwd=d
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS=")]
    assert lines, proc.stdout[-2000:] + proc.stderr[-4000:]
    res: dict[str, Any] = json.loads(lines[0][len("RESULTS=") :])
    res["<log>"] = log.read_text(encoding="utf-8")
    return res


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


def test_every_public_torch_cuda_name_has_a_row() -> None:
    import torch

    covered = {r["api"].split(" ")[0] for r in ROWS}
    missing = [n for n in torch.cuda.__all__ if f"torch.cuda.{n}" not in covered]
    assert not missing, f"torch.cuda names without a coverage row: {missing}"


def test_no_cuda_original_left_in_place(outcomes: dict[str, Any]) -> None:
    assert json.loads(outcomes["<untouched>"][1]) == []


@pytest.mark.parametrize("row", [r for r in ROWS if r["call"]], ids=lambda r: r["api"])
def test_row_under_run_target_cpu(row: dict[str, Any], outcomes: dict[str, Any]) -> None:
    status = row["cpu"].split(":", 1)[0]
    got, detail = outcomes[row["api"]]
    if status == "refused":
        assert got == "refused", f"{row['call']}: expected a refusal, got {got}: {detail}"
        assert "target cpu" in detail and "[torchport]" in detail, detail
        name = row["api"].rsplit(".", 1)[-1]
        assert f"[mismatch] {row['api']}" in outcomes["<log>"] or f"{name}" in outcomes["<log>"], detail
    else:
        assert got == "ok", f"{row['call']}: {status} in the table, but: {detail}"


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

    names = json.loads((ROOT / "data" / "runtime" / "device_names.json").read_text(encoding="utf-8"))["names"]
    rules = {r["api"]: r["device"] for r in ROWS}
    checked = 0
    with enabled(target, check=False) as s:
        for name in _cuda_ns.FUNCTIONS:
            if not hasattr(torch.cuda, name) or rules.get(f"torch.cuda.{name}") != "same-name":
                continue
            _, cls, _, shown = _cuda_ns.resolve(s, name)
            assert (shown == f"torch.{target}.{name}") == (name in names[target]), (name, shown, cls)
            checked += 1
    assert checked > 40
