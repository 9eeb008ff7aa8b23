"""Operators that the target's list calls native run the CPU kernel on the rehearsal device, not torch's
composite decomposition (docs/rehearse.md): LayerNorm equals the CPU's bit for bit, and the operator itself
gets the verdict."""

from __future__ import annotations

from pathlib import Path

from rehearse_testlib import read_report, rehearsal_built, rehearse  # noqa: F401

SCRIPT = """
import torch
torch.manual_seed(0)
x = torch.randn(64, 768)
ln = torch.nn.LayerNorm(768)
with torch.no_grad():
    ln.weight.uniform_(0.5, 1.5)
    ln.bias.uniform_(-0.1, 0.1)
y_cpu = ln(x)
y_dev = ln.to("{t}")(x.to("{t}")).cpu()
print("max abs diff", (y_cpu - y_dev).abs().max().item())
assert torch.equal(y_cpu, y_dev)
"""


def test_layer_norm_runs_the_cpu_kernel_and_is_judged_itself(
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    for target in ("npu", "musa"):
        script = tmp_path / f"ln_{target}.py"
        script.write_text(SCRIPT.format(t=target))
        report = tmp_path / f"{target}.json"
        p = rehearse("--target", target, "--report", str(report), str(script), cwd=tmp_path)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "max abs diff 0.0" in p.stdout
        rep = read_report(report)
        assert "native_layer_norm" in rep["listed_kernels"]
        # the decomposition would have shown its pieces (var_mean, rsqrt, ...) instead of the operator
        native = [r["op"] for r in rep["ops"]["native"]]
        assert "aten::native_layer_norm" in native, native
        assert not any("var_mean" in op for op in native), native
