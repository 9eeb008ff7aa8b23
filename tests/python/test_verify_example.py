"""`torchport verify` on the README's example project (examples/cuda_project), migrated for cpu.

The original's `autocast()` has no dtype: on CUDA (and under `torchport run`, which keeps CUDA's
default) it runs float16. migrate pins that dtype in the cpu output (TP201), so the two runs are
bit-identical. With TP201 ignored (`--ignore TP201`), the migrated `torch.amp.autocast("cpu")`
runs bfloat16, the CPU's default: verify must not hide that, the verdict is equivalent only with
the bfloat16 tolerance, and it names the migrate finding as the cause.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def verify(*projects: Path) -> tuple[int, dict]:
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchport",
            "verify",
            *map(str, projects),
            "--target",
            "cpu",
            "--ranks",
            "1",
            "--format",
            "json",
            "--",
            "--steps",
            "3",
            "--out",
            "ckpt.pt",
        ],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ),
        timeout=600,
    )
    return p.returncode, json.loads(p.stdout)


def test_the_example_project_is_identical_since_migrate_pins_the_amp_dtype() -> None:
    example = ROOT / "examples" / "cuda_project"
    code, rep = verify(example)
    assert (code, rep["verdict"]) == (0, "identical"), (rep["reason"], rep.get("traceback"))
    assert rep["expected_differences"] == []
    assert all(r["params_identical"] for r in rep["steps"])
    assert not (example / "ckpt.pt").exists()
    # GradScaler(): backward() gets the loss times 65536 (torch's initial scale); the table shows the
    # loss that training prints
    first = rep["steps"][0]
    assert first["loss_scale_original"] == [65536.0] == first["loss_scale_migrated"]
    assert first["loss_original"][0] == first["loss_unscaled_original"][0] * 65536.0
    assert 0.5 < first["loss_unscaled_original"][0] < 5.0


def test_without_the_pinned_dtype_it_is_equivalent_with_the_amp_dtype_named(tmp_path: Path) -> None:
    example = ROOT / "examples" / "cuda_project"
    m = subprocess.run(
        [sys.executable, "-m", "torchport", "migrate", str(example), "-t", "cpu", "-o", str(tmp_path), "-q"]
        + ["--ignore", "TP201"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert m.returncode == 0, m.stderr
    code, rep = verify(example, tmp_path / "cuda_project_cpu")
    assert (code, rep["verdict"]) == (0, "equivalent"), (rep["reason"], rep.get("traceback"))
    assert rep["tolerance_used"]["rtol"] == 0.05
    (cause,) = rep["expected_differences"]
    assert cause["where"] == "train.py:51"
    assert cause["dtype"] == "bfloat16"
    assert "without dtype= it runs bfloat16 (the target's default), the original float16" in cause["message"]
    assert "expected: train.py:51:" in rep["reason"]
    # not identical: the float16 and bfloat16 runs really differ
    assert not all(r["params_identical"] for r in rep["steps"])
    # the example was not written to: verify migrated it into a temporary directory
    assert not (example / "ckpt.pt").exists()
