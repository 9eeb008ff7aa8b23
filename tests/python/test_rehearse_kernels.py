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


TIED = """
import torch
from torchport.targets import get_target

class Tiny(torch.nn.Module):  # an embedding tied to the output layer, as GPT-2 (llm.c) ties wte and lm_head
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(50, 16)
        self.ln = torch.nn.LayerNorm(16)
        self.head = torch.nn.Linear(16, 50, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, x, y):
        logits = self.head(self.ln(self.wte(x)))
        return torch.nn.functional.cross_entropy(logits.view(-1, 50), y.view(-1))

def losses(device):
    torch.manual_seed(0)
    m = Tiny()
    x, y = torch.randint(0, 50, (4, 8)), torch.randint(0, 50, (4, 8))
    p0 = m.wte.weight
    m = m.to(device)
    kept = m.wte.weight is p0 and m.head.weight is m.wte.weight
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    out = []
    for _ in range(3):
        loss = m(x.to(device), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append(loss.item())
    return kept, len(list(m.parameters())), out

cpu = losses("cpu")
dev = losses("{t}")
print("cpu", cpu)
print("dev", dev)
if get_target("{t}").cpu_shallow_copy:
    assert dev == cpu, (dev, cpu)  # the Parameter kept, the tie kept, the losses equal bit for bit
else:
    assert dev[0] is False and dev[1] == cpu[1] + 1 and dev[2] != cpu[2], dev  # torch's own answer: untied
print("ok")
"""


def test_module_to_keeps_tied_weights_where_the_vendor_says_so(
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    """torch_npu and torch_mlu register aten::_has_compatible_shallow_copy_type so that Module.to(device)
    keeps each Parameter (data/targets.json "cpu_shallow_copy"); without it, Module.to unties tied weights
    (a new Parameter per module), which made llm.c's second loss differ by 5.5e-4 under rehearsal. No source
    says torch_musa does so: musa keeps torch's answer."""
    seen = {}
    for target in ("npu", "mlu", "musa"):
        script = tmp_path / f"tied_{target}.py"
        script.write_text(TIED.replace("{t}", target))
        p = rehearse("--target", target, str(script), cwd=tmp_path)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "ok" in p.stdout, p.stdout
        seen[target] = [ln for ln in p.stdout.splitlines() if ln.startswith("dev ")][0]
    # parameters: the tied wte/head weight, ln.weight, ln.bias; untied, head.weight is a fourth
    assert seen["npu"].startswith("dev (True, 3, ") and seen["mlu"].startswith("dev (True, 3, ")
    assert seen["musa"].startswith("dev (False, 4, ")


PRINT = """
import torch
x = torch.arange(6, dtype=torch.float32, device="{t}").reshape(2, 3) / 3
w = torch.ones(2, device="{t}", requires_grad=True)
print(x)
print(w * 2)
"""


def test_printing_a_tensor_runs_nothing_on_a_device_without_float64(
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    """torch formats a tensor with float64 ops on its own device; torch_npu prints from a CPU copy
    (data/targets.json "print_on_host"), so printing on npu is neither refused nor counted."""
    script = tmp_path / "print_npu.py"
    script.write_text(PRINT.format(t="npu"))
    report = tmp_path / "npu.json"
    p = rehearse("--target", "npu", "--report", str(report), str(script), cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "tensor([[0.0000, 0.3333, 0.6667],\n        [1.0000, 1.3333, 1.6667]], device='npu:0')" in p.stdout
    assert "tensor([2., 2.], device='npu:0', grad_fn=<MulBackward0>)" in p.stdout
    rep = read_report(report)
    assert not rep["ops"]["refused"], rep["ops"]["refused"]
    ops = {r["op"] for kind in ("native", "fallback") for r in rep["ops"][kind]}
    assert not any(op.startswith(("aten::min", "aten::max", "aten::masked_select")) for op in ops), ops
