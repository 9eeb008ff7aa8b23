"""One test per row of the coverage table (data/runtime/coverage.json): the call as a user writes it, run
under `torchport run --target cpu`, and under `torchport rehearse --target T -m torchport run --target T` for
the vendor targets npu and mlu. All rows of a target run in one subprocess (torch starts once); each test then
checks its own row's outcome against what the table says: served (redirected / emulated / n/a) or refused
with a clear error naming the target and the call, logged `mismatch`. On a vendor target, a redirected call
can still be refused by the (rehearsed) device; each such row is listed in DEVICE_SIDE with the device's
answer, so a new one fails and a listed one that starts working fails too."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from runtime_testlib import run_torchport
from tools_testlib import load_tool

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
from torchport._versions import parse
out = {}
for i, row in enumerate(ROWS):
    call = row["call"]
    if not call:
        continue
    if "since" in row and parse(torch.__version__) < parse(row["since"]):  # a later torch's name
        name = row["api"][len("torch.cuda."):]
        out[row["api"]] = ["absent" if not hasattr(torch.cuda, name) else "present", torch.__version__]
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
        cause = e.__cause__ or e.__context__
        why = f" (from {type(cause).__name__}: {cause})" if cause is not None else ""
        out[row["api"]] = ["error", f"{type(e).__name__}: {e}{why}"[:3000]]
from torchport.runtime._untouched import untouched_cuda_names
out["<untouched>"] = ["ok", json.dumps(untouched_cuda_names())]
print("RESULTS=" + json.dumps(out))
"""


def _run_rows(d: Path, target: str) -> dict[str, Any]:
    script = d / "rows.py"
    script.write_text(textwrap.dedent(PRELUDE), encoding="utf-8")
    rows = d / "rows.json"
    rows.write_text(json.dumps(ROWS), encoding="utf-8")
    log = d / "run.log"
    run = ["run", "--target", target, "--quiet", "--log", str(log), str(script), str(rows)]
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


def test_every_public_torch_cuda_name_has_a_row() -> None:
    import torch

    covered = {r["api"].split(" ")[0] for r in ROWS}
    missing = [n for n in torch.cuda.__all__ if f"torch.cuda.{n}" not in covered]
    assert not missing, f"torch.cuda names without a coverage row: {missing}"


def test_no_cuda_original_left_in_place(outcomes: dict[str, Any]) -> None:
    assert json.loads(outcomes["<untouched>"][1]) == []


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
    status = row["cpu"].split(":", 1)[0]
    got, detail = outcomes[row["api"]]
    if got in ("absent", "present"):  # a row for a newer torch: its name must be absent from this one
        assert got == "absent", f"{row['api']} exists in torch {detail}; the row says since {row['since']}"
        return
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


# What the rehearsed device answers to calls that torchport run did redirect to it. Each entry is a pattern
# the row's error must match; the reasons:
_NOT_EMULATED = r"torch\.{t}\.\w+ is not emulated by torchport rehearse"  # the stand-in raises, naming it
_NO_FLOAT64 = (
    r"Unsupport data type: at::ScalarType::(Complex)?Double \[torchport rehearse: aten::[\w.]+ on {t}"
)
_NO_LAYOUT = r"from the '(Quantized|Sparse|SparseCsr){t}' backend"  # no sparse / quantized kernels
# torch's generic kaiser_window kernel calls a per-device kernel (DispatchStub) that no list says the vendor
# registers; the rehearsal has none either
_NO_STUB = r"DispatchStub: missing kernel for {t}"
# the vendor's property object has its own fields (name, total_memory), not the ROCm field gcnArchName
_OWN_PROPS = r"AttributeError: '_Props' object has no attribute 'gcnArchName'"
_BOTH = {
    "torch.cuda.get_device_properties": _OWN_PROPS,
    "torch.cuda.caching_allocator_alloc": _NOT_EMULATED,
    "torch.cuda.caching_allocator_delete": _NOT_EMULATED,
    "torch.cuda.change_current_allocator": _NOT_EMULATED,
    "torch.cuda.ExternalStream": _NOT_EMULATED,
    "torch.cuda.CUDAGraph": _NOT_EMULATED,
    "torch.cuda.graph": _NOT_EMULATED,
    "torch.cuda.graph_pool_handle": _NOT_EMULATED,
    "torch.cuda.make_graphed_callables": _NOT_EMULATED,
    "torch.empty_quantized": _NO_LAYOUT,
    "torch.sparse_bsc_tensor": _NO_LAYOUT,
    "torch.sparse_bsr_tensor": _NO_LAYOUT,
    "torch.sparse_compressed_tensor": _NO_LAYOUT,
    "torch.sparse_coo_tensor": _NO_LAYOUT,
    "torch.sparse_csc_tensor": _NO_LAYOUT,
    "torch.sparse_csr_tensor": _NO_LAYOUT,
    "torch.kaiser_window": _NO_STUB,
    # the rehearsal runs PyTorch's CPU kernels, which have no record_stream; both vendors list it
    # (op_plugin_functions.yaml, mlu_functions.yaml), so a real device serves it
    "Tensor.record_stream": r"aten::record_stream cannot run on the rehearsal {t} device",
}
DEVICE_SIDE: dict[str, dict[str, str]] = {
    "npu": {
        **_BOTH,
        # torch_npu has these (torch_npu.npu.__all__), the rehearsal does not emulate them
        "torch.cuda.current_blas_handle": _NOT_EMULATED,
        "torch.cuda.MemPool": _NOT_EMULATED,
        "torch.cuda.use_mem_pool": _NOT_EMULATED,
        # npu has no float64 (data/targets.json no_dtypes); jit.trace checks its trace in float64
        "torch.cuda.DoubleStorage": _NO_FLOAT64,
        "torch.cuda.ComplexDoubleStorage": _NO_FLOAT64,
        "torch.jit.trace": _NO_FLOAT64,
    },
    # torch_mlu's list has no MemPool and no current_blas_handle: those rows do what cpu does
    "mlu": dict(_BOTH),
}


@pytest.fixture(scope="module", params=sorted(DEVICE_SIDE))
def rehearsed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any]:
    target = str(request.param)
    return target, _run_rows(tmp_path_factory.mktemp(f"coverage_{target}"), target)


def _expected_status(row: dict[str, Any], target: str) -> str:
    gen = load_tool("gen_runtime_coverage")
    names = json.loads((ROOT / "data" / "runtime" / "device_names.json").read_text(encoding="utf-8"))["names"]
    text = gen.cell(row, target, names)
    st = str(gen.status(text))
    return str(gen.status(row["cpu"])) if st == "as cpu" else st


def test_every_row_under_run_on_a_rehearsed_vendor_target(rehearsed: tuple[str, Any]) -> None:
    """Every row with a call, as the table's cell for the target says; device-side answers as listed."""
    import re

    target, res = rehearsed
    side = DEVICE_SIDE[target]
    assert json.loads(res["<untouched>"][1]) == []
    wrong = []
    for row in ROWS:
        if not row["call"]:
            continue
        got, detail = res[row["api"]]
        status = _expected_status(row, target)
        if got in ("absent", "present"):  # a row for a newer torch: its name must be absent from this one
            if got != "absent":
                wrong.append(f"{row['api']}: exists in torch {detail}, but the row says since {row['since']}")
            continue
        if row["api"] in side:
            pattern = side[row["api"]].format(t=target)
            if got == "ok" or not re.search(pattern, detail):
                wrong.append(f"{row['api']}: the device's answer /{pattern}/ expected, got {got}: {detail}")
        elif status == "refused":
            if got != "refused" or f"target {target}" not in detail or "[torchport]" not in detail:
                wrong.append(f"{row['api']}: a refusal naming target {target} expected, got {got}: {detail}")
        elif got != "ok":
            wrong.append(f"{row['api']}: {status} in the table for {target}, but {got}: {detail}")
        if got != "ok" and re.search(r"not compiled with CUDA|CUDA driver|device='cuda|'cuda:\d", detail):
            wrong.append(f"{row['api']}: the error names CUDA: {detail}")
    assert not wrong, "\n".join(wrong)
