"""`torchport check-ops ... -- script.py`: an unchanged CUDA script traced on this CPU; text/json/csv."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from torchport.check_ops import cli
from torchport.check_ops.report import CSV_COLUMNS

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "check_ops"
SCRIPT = FIXTURES / "train_cuda.py"


def site(tag: str) -> str:
    for i, line in enumerate(SCRIPT.read_text().splitlines(), 1):
        if line.rstrip().endswith(f"# site: {tag}"):
            return f"{SCRIPT}:{i}"
    raise AssertionError(tag)


def check_ops(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchport", "check-ops", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def json_run() -> subprocess.CompletedProcess[str]:
    targets = ["--target", "npu", "--target", "mlu", "--target", "mps"]
    return check_ops(*targets, "--steps", "2", "--format", "json", "--", str(SCRIPT), "--steps", "5")


def test_script_mode_json(json_run):
    assert json_run.returncode == 0, json_run.stderr
    doc = json.loads(json_run.stdout)  # the script's own prints went to stderr
    assert doc["steps"] == 2
    assert [t["target"] for t in doc["targets"]] == ["npu", "mlu", "mps"]
    # one row per (op, status): an op called with float32 and float64 can have two
    ops = {t["target"]: {(o["op"], o["status"]): o for o in t["ops"]} for t in doc["targets"]}
    for target in ("npu", "mlu"):
        assert ("aten::lgamma", "native") not in ops[target]
        lg = ops[target]["aten::lgamma", "fallback"]
        assert lg["calls"] == 2  # one per step
        assert lg["first_call_site"] == site("lgamma")
        assert lg["dtypes"] == ["float32"]
    assert ("aten::lgamma", "native") in ops["mps"]
    for target in ("npu", "mps"):
        mul = ops[target]["aten::mul.Tensor", "unsupported_dtype"]
        assert mul["first_call_site"] == site("float64") and "float64" in mul["dtypes"]
    assert ("aten::mul.Tensor", "unsupported_dtype") not in ops["mlu"]
    npu = doc["targets"][0]
    assert 0 < npu["coverage"]["native_ops_share"] < 1
    assert npu["coverage"]["counts"]["fallback"] >= 2  # lgamma and its backward digamma
    assert 0 < npu["host_time_share"] < 1
    assert doc["targets"][2]["host_time_share"] == 0  # nothing falls back on mps


def test_the_profilers_own_stderr_lines_are_captured(json_run):
    """kineto writes "USDT:... SyncActivityProfilerHandler.cpp:52] profiler_start" to file descriptor 2
    when a trace starts and stops (torch 2.13): not among the output, but in the json notes (issue 21 §6)."""
    assert "SyncActivityProfilerHandler" not in json_run.stderr
    assert "profiler_start" not in json_run.stderr
    notes = json.loads(json_run.stdout)["notes"]
    profiler = [n for n in notes if n.startswith("warning: profiler: ")]
    if profiler:  # the count is said on stderr, with the warnings
        assert "profiler line(s) from torch or the script captured (-v prints them)" in json_run.stderr
    # The script's own stderr (its prints, redirected there by check-ops) is untouched.
    assert "step 0 loss" in json_run.stderr
    verbose = check_ops("--target", "npu", "-v", "--", str(SCRIPT), "--steps", "1")
    assert verbose.returncode == 0, verbose.stderr
    # -v prints them, each marked as the profiler's.
    lines = [line for line in verbose.stderr.splitlines() if "SyncActivityProfilerHandler" in line]
    assert bool(lines) == bool(profiler)
    assert all(line.startswith("profiler: ") for line in lines)


def test_script_mode_stops_after_the_requested_steps(json_run):
    # train_cuda.py prints after each optimizer step; the second step ends the run.
    assert "step 0 loss" in json_run.stderr
    assert "step 1 loss" not in json_run.stderr and "done" not in json_run.stderr


def test_script_mode_text_and_output_file(tmp_path):
    out = tmp_path / "report.txt"
    p = check_ops("--target", "npu", "--steps", "2", "-o", str(out), "--", str(SCRIPT))
    assert p.returncode == 0, p.stderr
    assert "step 0 loss" in p.stdout  # with -o the script keeps its stdout
    text = out.read_text()
    assert "== npu (database for torch 2.13) ==" in text
    assert f"  fallback          aten::lgamma  x2  [float32]  at {site('lgamma')}" in text
    assert "TORCH_NPU_FALLBACK_CPU_DISABLE=1" in text
    assert "coverage: " in text and "estimated host share of step time" in text
    assert not list(tmp_path.glob(".*tmp"))  # atomic write left nothing behind


def test_script_mode_csv():
    p = check_ops("--target", "mlu", "--format", "csv", "--", str(SCRIPT), "--steps", "1")
    assert p.returncode == 0, p.stderr
    rows = list(csv.reader(io.StringIO(p.stdout)))
    assert tuple(rows[0]) == CSV_COLUMNS
    body = [dict(zip(CSV_COLUMNS, r)) for r in rows[1:]]
    assert {r["target"] for r in body} == {"mlu"}
    lg = [r for r in body if r["op"] == "aten::lgamma"]
    assert len(lg) == 1 and lg[0]["status"] == "fallback" and lg[0]["first_call_site"] == site("lgamma")
    assert "ENABLE_FALLBACK_TO_CPU=0" in lg[0]["fix"]


def test_failing_script_still_reports(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nx = torch.ones(3).cuda()\ny = torch.lgamma(x)\nraise ValueError('boom')\n")
    p = check_ops("--target", "npu", "--", str(bad))
    assert p.returncode == 1
    assert "ValueError: boom" in p.stderr  # the script's traceback, as python prints it
    assert f"aten::lgamma  x1  [float32]  at {bad}:3" in p.stdout
    assert "over the whole run (no optimizer step)" in p.stdout
    assert "exited with code 1" in p.stderr


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--target", "npu"], "give the script to run after `--`"),
        (["--target", "tpu", "--", "x.py"], "invalid choice: 'tpu'"),
        (["--target", "npu", "--torch-version", "two", "--", "x.py"], "expected X.Y"),
        (["--target", "npu", "--steps", "0", "--", "x.py"], "--steps must be at least 1"),
    ],
)
def test_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_missing_script(tmp_path, capsys):
    assert cli.main(["--target", "npu", "--", str(tmp_path / "nope.py")]) == 2
    assert f"{tmp_path / 'nope.py'}: no such script" in capsys.readouterr().err
