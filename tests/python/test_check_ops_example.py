"""`torchport check-ops` on examples/cuda_project, as the README shows it: what a user would notice."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROJECT = REPO / "examples" / "cuda_project"
TRAIN = PROJECT / "train.py"
NET = PROJECT / "model" / "net.py"


def line_of(path: Path, text: str) -> str:
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if text in line:
            return f"{path}:{i}"
    raise AssertionError(text)


@pytest.fixture(scope="module")
def doc() -> dict:
    p = subprocess.run(
        [sys.executable, "-m", "torchport", "check-ops", "--target", "npu", "--target", "mps", "--steps", "2"]
        + ["--format", "json", "--", str(TRAIN), "--steps", "3"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def ops(doc: dict, target: str) -> dict[tuple[str, str], dict]:
    t = next(t for t in doc["targets"] if t["target"] == target)
    return {(o["op"], o["status"]): o for o in t["ops"]}


def test_two_steps_and_coverage_per_target(doc):
    assert doc["steps"] == 2
    assert doc["phases"]["setup"] > 0  # the model's init ran before the first forward
    for t in doc["targets"]:
        cov = t["coverage"]
        assert cov["distinct_ops"] >= 20 and cov["op_calls"] >= 100
        assert 0.8 < cov["native_ops_share"] < 1.0 and 0.8 < cov["native_calls_share"] < 1.0
        lo, hi = t["host_time_share_range"]
        assert 0.0 <= lo <= hi <= 1.0


def test_gradscaler_float64_is_flagged_on_npu_and_mps(doc):
    # torch's GradScaler computes the inverse scale in float64 (`_scale.double().reciprocal()`), reached
    # from the user's scaler.step(optimizer).
    for target in ("npu", "mps"):
        r = ops(doc, target)["aten::reciprocal", "unsupported_dtype"]
        assert r["dtypes"] == ["float64"] and r["first_call_site"] == line_of(TRAIN, "scaler.step(optimizer)")
        assert "float32" in r["fix"]


def test_call_sites_are_in_the_users_files(doc):
    npu = ops(doc, "npu")
    conv = npu["aten::convolution", "native"]
    assert conv["first_call_site"] == line_of(NET, "F.max_pool2d(F.relu(self.conv1(x)), 2)")
    assert conv["calls"] == 4  # two convolutions, two steps
    loss = npu["aten::nll_loss_forward", "native"]
    assert loss["first_call_site"] == line_of(TRAIN, "torch.nn.functional.cross_entropy")


def test_npu_advises_fused_sgd_and_linear(doc):
    npu = next(t for t in doc["targets"] if t["target"] == "npu")
    advice = {a["for"]: a for a in npu["advice"]}
    assert advice["torch.optim.SGD"]["use"] == "apex.optimizers.NpuFusedSGD"
    assert advice["torch.optim.SGD"]["calls"] == 2
    assert advice["aten::linear"]["first_call_site"] == line_of(NET, "self.head(x.flatten(1))")
    mps = next(t for t in doc["targets"] if t["target"] == "mps")
    assert mps["advice"] == []
