"""The README workflow on examples/accuracy/train.py: fp32 against autocast-bf16 on CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchport.probe.cli import compare_main, probe_main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "accuracy" / "train.py"


@pytest.mark.skipif(not EXAMPLE.exists(), reason="examples/ is not part of this checkout")
def test_readme_workflow(tmp_path, capsys):
    fp32, bf16 = tmp_path / "fp32.dump", tmp_path / "bf16.dump"
    common = ["--full-tensors", "--steps", "1", "--"]
    assert probe_main(["--out", str(fp32), *common, str(EXAMPLE)]) == 0
    assert probe_main(["--out", str(bf16), *common, str(EXAMPLE), "--bf16"]) == 0
    out = capsys.readouterr().out
    assert out.count("step 0 loss") == 2
    assert compare_main([str(bf16), str(fp32)]) == 1  # rows are flagged
    report = capsys.readouterr().out
    # `embed` is the model's first layer, a Linear: autocast runs it in bf16 on an identical fp32
    # input, so it is where the numbers first move (docs/probe.md, examples/accuracy/README.md).
    assert "first divergence (forward):    embed (Linear) forward call 0 output[0]  WARN" in report
    assert "first divergence (backward):   none" in report
    assert ", 0 fail;" in report  # bf16 loses digits, not direction: no msprobe threshold fails
