"""FlexAttention on the rehearsal device follows the vendor's import (data/targets.json "flex_attention"):
on npu, as with torch_npu 2.13.0, eager flex_attention runs on the device (forward and backward, equal to
an eager math reference on the CPU) and under the device's autocast; on mlu and musa, for which no source
says the vendor does this, torch's own device check refuses the device (docs/rehearse.md, "FlexAttention")."""

from __future__ import annotations

from pathlib import Path

from rehearse_testlib import rehearsal_built, rehearse  # noqa: F401
from torchport.targets import get_target

# The reference is the attention written out on the CPU: scores, the score_mod's bias, the causal mask,
# softmax, the weighted values. Torch 2.13 refuses FlexAttention backward on CPU tensors, so flex_attention
# itself cannot be the CPU reference for the gradients.
SCRIPT = """
import sys
import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

t = sys.argv[1]
torch.manual_seed(0)
B, H, S, D = 2, 3, 256, 16
q, k, v = (torch.randn(B, H, S, D) for _ in range(3))
dout = torch.randn(B, H, S, D)
scale = D ** -0.5

def causal(b, h, qi, ki):
    return qi >= ki

def bias(score, b, h, qi, ki):  # a per-head relative-position bias
    return score + (h + 1) * 0.01 * (ki - qi)

qc, kc, vc = (x.clone().requires_grad_() for x in (q, k, v))
s = (qc @ kc.transpose(-1, -2)) * scale
i = torch.arange(S)
s = s + (torch.arange(H) + 1).view(1, H, 1, 1) * 0.01 * (i.view(1, S) - i.view(S, 1))
s = s.masked_fill(i.view(1, S) > i.view(S, 1), float("-inf"))
ref = torch.softmax(s, dim=-1) @ vc
ref.backward(dout)

try:
    qd, kd, vd = (x.to(t).requires_grad_() for x in (q, k, v))
    mask = create_block_mask(causal, B=None, H=None, Q_LEN=S, KV_LEN=S, device=t)
    out = flex_attention(qd, kd, vd, score_mod=bias, block_mask=mask, scale=scale)
except ValueError as e:
    print("refused:", e)
    raise SystemExit(0)
out.backward(dout.to(t))
print("device", out.device, qd.grad.device)
pairs = (("out", out, ref), ("dq", qd.grad, qc.grad), ("dk", kd.grad, kc.grad), ("dv", vd.grad, vc.grad))
for name, a, b in pairs:
    torch.testing.assert_close(a.detach().cpu(), b, rtol=1e-5, atol=1e-5)
    print(name, "max abs diff", (a.detach().cpu() - b).abs().max().item())

with torch.autocast(t, dtype=torch.bfloat16):
    low = flex_attention(q.to(t), k.to(t), v.to(t), score_mod=bias, block_mask=mask, scale=scale)
print("autocast dtype", low.dtype)
torch.testing.assert_close(low.float().cpu(), ref.detach(), rtol=0.05, atol=0.05)

# torch_npu's replacement check returns at once for another device's tensors: the CPU's refusal of
# FlexAttention backward is gone with it.
qh = q.clone().requires_grad_()
flex_attention(qh, k, v).sum().backward()
print("cpu backward", qh.grad.shape)
"""


def test_flex_attention_runs_where_the_vendor_says_so(
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    script = tmp_path / "flex.py"
    script.write_text(SCRIPT)
    assert get_target("npu").flex_attention
    assert not get_target("mlu").flex_attention and not get_target("musa").flex_attention
    p = rehearse("--target", "npu", str(script), "npu", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "refused" not in p.stdout, p.stdout
    assert "device npu:0 npu:0" in p.stdout, p.stdout
    for name in ("out", "dq", "dk", "dv"):
        assert f"{name} max abs diff" in p.stdout, p.stdout
    assert "autocast dtype torch.bfloat16" in p.stdout, p.stdout
    assert "cpu backward torch.Size([2, 3, 256, 16])" in p.stdout, p.stdout
    for target in ("mlu", "musa"):
        p = rehearse("--target", target, str(script), target, cwd=tmp_path)
        assert p.returncode == 0, p.stdout + p.stderr
        assert (
            "refused: FlexAttention is only supported on CUDA, CPU, HPU, or MPS devices. "
            f"Found input tensors on {target} device." in p.stdout
        ), p.stdout
