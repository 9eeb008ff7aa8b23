"""torch_npu's fused operators under `torchport rehearse --target npu` (issue 31 §2): the reference kernels of
torchport/rehearse/npu_fused.py against formulas written here from Ascend's documentation (the torch-npu
2.13.0 wheel's torch_npu/_op_plugin_docs.py), forward and gradients (gradcheck in float64 on the CPU), then on
the rehearsal device with the vendor's package and with the stand-in, and the vendor's advised optimizers
against torch.optim."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from rehearse_testlib import REPO, rehearsal_built, rehearse  # noqa: F401

torch = pytest.importorskip("torch")

from torchport.rehearse import npu_fused as nf  # noqa: E402

F64 = torch.float64
SHARED = REPO.parent / "shared" / "upstream"
PIN = json.loads((REPO / "data/vendor/torch_npu_wheels.json").read_text())["wheels"][-1]
WHEEL = REPO / "build/torch_npu_wheels" / PIN["filename"]
VENDOR = REPO / "build/vendor-torch-npu"
FIXTURE = Path(__file__).resolve().parent / "fixtures/rehearse/npu_fused_ops.py"


def _gen(seed: int) -> Any:
    return torch.Generator().manual_seed(seed)


def _randn(*shape: int, seed: int = 0, dtype: Any = F64, grad: bool = True) -> Any:
    return torch.randn(*shape, generator=_gen(seed), dtype=dtype).requires_grad_(grad)


def _gradcheck_pair(
    forward: Callable[..., Any], backward: Callable[..., Any], inputs: tuple[Any, ...]
) -> None:
    """gradcheck of a kernel's backward formula against numerical differences of its forward."""

    class Op(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *xs: Any) -> Any:
            ctx.save_for_backward(*xs)
            return forward(*xs)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return backward(g, *ctx.saved_tensors)

    assert torch.autograd.gradcheck(Op.apply, inputs, eps=1e-6, atol=1e-5)


# ---- npu_rms_norm: y = x / sqrt(mean(x^2) + eps) * gamma (the docs: LayerNorm without the mean) ----
def _rms_formula(x: Any, gamma: Any, eps: float) -> Any:
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    return x / torch.sqrt((x * x).mean(dim=dims, keepdim=True) + eps) * gamma


@pytest.mark.parametrize("shape,gshape", [((3, 4, 8), (8,)), ((2, 3, 4, 6), (4, 6))])
def test_rms_norm_is_the_documented_formula_with_its_gradients(
    shape: tuple[int, ...], gshape: tuple[int, ...]
) -> None:
    x, gamma = _randn(*shape, seed=1), _randn(*gshape, seed=2)
    y, rstd = nf.rms_norm(x, gamma, 1e-5)
    torch.testing.assert_close(y, _rms_formula(x, gamma, 1e-5))
    lead = len(shape) - len(gshape)
    assert list(rstd.shape) == list(shape[:lead]) + [1] * len(gshape)  # the meta kernel's shape
    _gradcheck_pair(
        lambda a, b: nf.rms_norm(a, b, 1e-5)[0],
        lambda g, a, b: nf.rms_norm_backward(g, a, b, nf.rms_norm(a, b, 1e-5)[1]),
        (x, gamma),
    )
    # and the backward equals autograd through the independent formula
    g = _randn(*shape, seed=3, grad=False)
    dx, dgamma = nf.rms_norm_backward(g, x, gamma, rstd)
    ex, eg = torch.autograd.grad(_rms_formula(x, gamma, 1e-5), (x, gamma), g)
    torch.testing.assert_close(dx, ex)
    torch.testing.assert_close(dgamma, eg)


def test_rms_norm_computes_half_precision_in_float32() -> None:
    x, gamma = _randn(4, 16, seed=4, dtype=torch.bfloat16, grad=False), _randn(16, seed=5, grad=False)
    y, rstd = nf.rms_norm(x, gamma.to(torch.bfloat16), 1e-6)
    assert y.dtype == torch.bfloat16 and rstd.dtype == torch.float32
    want = _rms_formula(x.double(), gamma.to(torch.bfloat16).double(), 1e-6)
    torch.testing.assert_close(y.double(), want, atol=2e-2, rtol=1e-2)


# ---- npu_rotary_mul: r1 * x + r2 * x_new (the docs' two modes and the rotate matrix) ----
def _rot_formula(x: Any, r1: Any, r2: Any, mode: str) -> Any:
    d = x.shape[-1]
    if mode == "half":  # x_new = cat(-x2, x1)
        x_new = torch.cat((-x[..., d // 2 :], x[..., : d // 2]), dim=-1)
    else:  # interleave: pairs (x0, x1) -> (-x1, x0)
        x_new = torch.empty_like(x)
        x_new[..., 0::2] = -x[..., 1::2]
        x_new[..., 1::2] = x[..., 0::2]
    return r1 * x + r2 * x_new


@pytest.mark.parametrize("mode", ["half", "interleave"])
@pytest.mark.parametrize("rshape", [(1, 1, 5, 8), (2, 1, 5, 8), (2, 3, 5, 8)])  # 11SD, B1SD, BNSD
def test_rotary_mul_is_the_documented_formula_with_its_gradients(mode: str, rshape: tuple[int, ...]) -> None:
    x, r1, r2 = _randn(2, 3, 5, 8, seed=6), _randn(*rshape, seed=7), _randn(*rshape, seed=8)
    torch.testing.assert_close(nf.rotary_mul(x, r1, r2, mode), _rot_formula(x, r1, r2, mode))
    _gradcheck_pair(
        lambda a, b, c: nf.rotary_mul(a, b, c, mode),
        lambda g, a, b, c: nf.rotary_mul_backward(g, a, b, c, mode),
        (x, r1, r2),
    )


def test_rotary_mul_with_a_rotate_matrix_is_x_at_rotate() -> None:
    n = 8  # the docs' example 3: the half-mode rotate matrix gives the half mode's result
    rotate = torch.zeros(n, n, dtype=F64)
    rotate[: n // 2, n // 2 :] = torch.eye(n // 2, dtype=F64)
    rotate[n // 2 :, : n // 2] = -torch.eye(n // 2, dtype=F64)
    x, r1, r2 = _randn(2, 2, 5, n, seed=9), _randn(1, 1, 5, n, seed=10), _randn(1, 1, 5, n, seed=11)
    torch.testing.assert_close(nf.rotary_mul(x, r1, r2, "half", rotate), _rot_formula(x, r1, r2, "half"))


# ---- npu_swiglu: A * sigmoid(A) * B, A and B the halves of x along dim ----
@pytest.mark.parametrize("dim", [-1, 1])
def test_swiglu_is_the_documented_formula_with_its_gradients(dim: int) -> None:
    x = _randn(3, 6, 4, seed=12)
    a, b = x.split(x.shape[dim] // 2, dim=dim)
    torch.testing.assert_close(nf.swiglu(x, dim), a * torch.sigmoid(a) * b)
    _gradcheck_pair(lambda t: nf.swiglu(t, dim), lambda g, t: nf.swiglu_backward(g, t, dim), (x,))


# ---- npu_fusion_attention: Softmax(Mask(scale * (pse + q k^T), atten_mask)) v ----
def _attn_formula(q: Any, k: Any, v: Any, scale: float, masked: Optional[Any], pse: Optional[Any]) -> Any:
    """BNSD; masked: True where a score is left out (the docs' atten_mask); GQA by repeating kv heads."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    s = torch.einsum("bnqd,bnkd->bnqk", q, k)
    if pse is not None:
        s = s + pse
    s = s * scale
    if masked is not None:
        s = s.masked_fill(masked, float("-inf"))
    return torch.einsum("bnqk,bnkd->bnqd", torch.softmax(s, dim=-1), v)


def _to_layout(t: Any, layout: str) -> Any:  # from BNSD
    b, n, s, d = t.shape
    return {
        "BNSD": t,
        "BSND": t.transpose(1, 2),
        "BSH": t.transpose(1, 2).reshape(b, s, n * d),
        "SBH": t.permute(2, 0, 1, 3).reshape(s, b, n * d),
    }[layout].contiguous()


@pytest.mark.parametrize("layout", ["BSH", "SBH", "BSND", "BNSD"])
@pytest.mark.parametrize("nkv", [4, 2])  # MHA and GQA
def test_fusion_attention_layouts_and_gqa(layout: str, nkv: int) -> None:
    b, n, sq, skv, d = 2, 4, 5, 6, 8
    q, k, v = _randn(b, n, sq, d, seed=13), _randn(b, nkv, skv, d, seed=14), _randn(b, nkv, skv, d, seed=15)
    scale = 1 / math.sqrt(d)
    out, smax, ssum, sout, seed, offset, numels = nf.fusion_attention(
        _to_layout(q, layout), _to_layout(k, layout), _to_layout(v, layout), n, layout, scale=scale
    )
    torch.testing.assert_close(out, _to_layout(_attn_formula(q, k, v, scale, None, None), layout))
    assert list(smax.shape) == list(ssum.shape) == [b, n, sq, 8] and sout.numel() == 0
    assert (seed, offset, numels) == (0, 0, 0)
    s = torch.einsum("bnqd,bnkd->bnqk", q, k.repeat_interleave(n // nkv, dim=1)) * scale
    torch.testing.assert_close(smax[..., 3], s.amax(-1))
    torch.testing.assert_close(ssum[..., 0], torch.exp(s - s.amax(-1, keepdim=True)).sum(-1))


def _mask_cases(sq: int, skv: int) -> list[tuple[str, int, Any, Any, int, int]]:
    """(name, sparse_mode, atten_mask passed, the positions left out, pre_tockens, next_tockens)."""
    i, j = torch.arange(sq).unsqueeze(1), torch.arange(skv).unsqueeze(0)
    given = torch.rand(2, 1, sq, skv, generator=_gen(16)) > 0.7
    given[..., 0] = False  # no fully masked row
    compressed = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)  # the docs' 2048x2048
    return [
        ("mode 0, B1SS bool", 0, given, given, 2147483647, 2147483647),
        ("mode 1, uint8 SS", 1, given[0, 0].to(torch.uint8), given[0, 0], 2147483647, 2147483647),
        ("mode 2, left-up causal", 2, compressed, j > i, 2147483647, 2147483647),
        ("mode 3, right-down causal", 3, compressed, j > i + (skv - sq), 2147483647, 2147483647),
        (
            "mode 4, band from the bottom right",
            4,
            compressed,
            (j - i - (skv - sq) > 1) | (j - i - (skv - sq) < -2),
            2,
            1,
        ),
    ]


@pytest.mark.parametrize("case", range(5))
def test_fusion_attention_masks_and_their_gradients(case: int) -> None:
    b, n, sq, skv, d = 2, 2, 4, 6, 4
    name, mode, mask, masked, pre, nxt = _mask_cases(sq, skv)[case]
    q, k, v = _randn(b, n, sq, d, seed=17), _randn(b, n, skv, d, seed=18), _randn(b, n, skv, d, seed=19)
    pse = _randn(1, n, sq, skv, seed=20)
    kw = dict(atten_mask=mask, scale=0.5, pre_tockens=pre, next_tockens=nxt, sparse_mode=mode)
    out = nf.fusion_attention(q, k, v, n, "BNSD", pse=pse, **kw)[0]
    want = _attn_formula(q, k, v, 0.5, masked, pse)
    torch.testing.assert_close(out, want, msg=name)
    dy = _randn(b, n, sq, d, seed=21, grad=False)
    grad_kw = {key: val for key, val in kw.items() if key != "scale"}
    dq, dk, dv, dpse, dsink = nf.fusion_attention_grad(
        q, k, v, dy, n, "BNSD", pse=pse, scale_value=0.5, **grad_kw
    )
    eq, ek, ev, ep = torch.autograd.grad(want, (q, k, v, pse), dy)
    for got, exp in ((dq, eq), (dk, ek), (dv, ev), (dpse, ep)):
        torch.testing.assert_close(got, exp, msg=name)
    assert dsink.numel() == 0


def test_fusion_attention_grad_passes_gradcheck_with_gqa_in_bsh() -> None:
    n, nkv, d = 4, 2, 3
    q, k, v = _randn(1, 3, n * d, seed=22), _randn(1, 4, nkv * d, seed=23), _randn(1, 4, nkv * d, seed=24)

    def fwd(a: Any, b_: Any, c: Any) -> Any:
        return nf.fusion_attention(a, b_, c, n, "BSH", scale=0.7)[0]

    def bwd(g: Any, a: Any, b_: Any, c: Any) -> Any:
        return nf.fusion_attention_grad(a, b_, c, g, n, "BSH", scale_value=0.7)[:3]

    _gradcheck_pair(fwd, bwd, (q, k, v))


def test_fusion_attention_gives_zero_for_a_fully_masked_row() -> None:
    """The docs do not say what a row with every key masked gives; the reference gives 0, not NaN."""
    q = _randn(1, 1, 2, 4, seed=26, grad=False)
    mask = torch.tensor([[True, True], [False, True]])
    out = nf.fusion_attention(q, q, q, 1, "BNSD", atten_mask=mask)[0]
    assert out[0, 0, 0].eq(0).all() and torch.equal(out[0, 0, 1], q[0, 0, 0])


@pytest.mark.parametrize(
    "kwargs,says",
    [
        ({"keep_prob": 0.9}, "keep_prob=0.9 (dropout draws its mask with the NPU's Philox generator"),
        ({"input_layout": "TND"}, "input_layout='TND'"),
        ({"sparse_mode": 5, "atten_mask": torch.zeros(4, 4, dtype=torch.bool)}, "sparse_mode=5"),
        ({"padding_mask": torch.zeros(1)}, "padding_mask"),
        ({"actual_seq_qlen": [2, 4]}, "actual_seq_qlen"),
    ],
)
def test_fusion_attention_refuses_what_it_does_not_emulate(kwargs: dict[str, Any], says: str) -> None:
    q = _randn(1, 4, 8, seed=25, grad=False)
    args = {"input_layout": "BSH", **kwargs}
    layout = args.pop("input_layout")
    with pytest.raises(
        NotImplementedError, match=r"^torch\.ops\.npu\.npu_fusion_attention: " + re.escape(says)
    ):
        nf.fusion_attention(q, q, q, 2, layout, **args)


# ---- the storage operators of the advised optimizers ----
def test_change_data_ptr_makes_a_window_of_the_buffer_and_keeps_the_storage_size() -> None:
    a, b = torch.arange(3.0), torch.arange(4.0).reshape(2, 2)
    buffer = torch.zeros(10)
    assert nf.get_storage_size(a) == 3 and nf.get_npu_format(a) == nf.ND
    assert nf.npu_change_data_ptr(a, buffer, 0) == 0 and nf.npu_change_data_ptr(b, buffer, 3) == 0
    buffer.copy_(torch.arange(10.0))
    assert a.tolist() == [0.0, 1.0, 2.0] and b.tolist() == [[3.0, 4.0], [5.0, 6.0]]  # windows of the buffer
    a.mul_(-1)
    assert buffer[:3].tolist() == [-0.0, -1.0, -2.0]
    # torch_npu's storage size is the tensor's own, which the move does not change (combine_tensors adds them)
    assert nf.get_storage_size(a) == 3 and nf.get_storage_size(b) == 4 and nf.get_storage_size(buffer) == 10
    with pytest.raises(RuntimeError, match="index 8 is out of src's storage"):
        nf.npu_change_data_ptr(torch.zeros(3), buffer, 8)
    assert nf.npu_format_cast(a, 2) is a and nf.npu_format_cast(a, 0) is a
    with pytest.raises(NotImplementedError, match="private storage format 29"):
        nf.npu_format_cast(a, 29)


# ---- the schemas of the stand-in: Ascend's, as the wheel has them ----
def test_the_stand_ins_schemas_are_ascends() -> None:
    ours = nf.schemas()
    assert set(ours) == set(nf.SERVED)
    sources = [
        SHARED / "ascend-op-plugin/op_plugin_functions.yaml",
        SHARED / "ascend-torch_npu/npu_native_functions.yaml",
    ]
    wheel_yaml = VENDOR / "torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml"
    if not all(p.is_file() for p in sources):
        pytest.skip(f"{SHARED} is absent: the schemas' source cannot be read")
    upstream = "".join(p.read_text(encoding="utf-8") for p in sources)
    for name, schema in ours.items():
        assert f"func: {schema}\n" in upstream, name
    if wheel_yaml.is_file():  # the vendor's package, where CI installed it
        wheel = wheel_yaml.read_text(encoding="utf-8")
        assert all(f"func: {s}\n" in wheel for s in ours.values())


# ---- on the rehearsal device: both torch_npu packages ----
def _run_fixture(which: str, tmp_path: Path) -> dict[str, Any]:
    report = tmp_path / f"report-{which.replace('/', '_')}.json"
    p = rehearse(
        "--target", "npu", "--vendor-torch-npu", which, "--report", str(report), str(FIXTURE), timeout=600
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    facts = json.loads(p.stdout.strip().splitlines()[-1])
    facts["report"] = json.loads(report.read_text())
    return facts


def _check_device_facts(facts: dict[str, Any], vendor: bool) -> None:
    # each operator on npu tensors (float32) against the test's formulas on the CPU, outputs and gradients
    diffs = facts["diffs"]
    assert set(diffs) >= {
        "rms_norm",
        "rotary_mul",
        "swiglu",
        "fusion_attention BSH",
        "fusion_attention BNSD causal",
    }
    for name, d in diffs.items():
        assert d < 1e-5, (name, d)
    assert facts["cpu_refused"].startswith(
        "Could not run 'npu::npu_rms_norm' with arguments from the 'CPU' backend"
    )
    assert facts["float64_refused"].startswith(
        "Unsupport data type: at::ScalarType::Double [torchport rehearse: npu::npu_rms_norm on npu"
    )
    assert facts["dropout_refused"].startswith("torch.ops.npu.npu_fusion_attention: keep_prob=0.5")
    native = {r["op"] for r in facts["report"]["ops"]["native"]}
    assert {"npu::npu_rms_norm", "npu::npu_rms_norm_backward", "npu::npu_fusion_attention_grad"} <= native
    if vendor:  # every other torch.ops.npu operator of the wheel refuses, naming itself
        assert facts["other_refused"].startswith(
            "NotImplementedError: npu::npu_gelu_mul cannot run on the rehearsal npu device"
        )
        refused = {r["op"] for r in facts["report"]["ops"]["refused"]}
        assert "npu::npu_gelu_mul" in refused
    else:  # the stand-in defines the served operators only
        assert "has no attribute 'npu_gelu_mul'" in facts["other_refused"]


def test_the_fused_operators_on_the_device_with_the_stand_in(rehearsal_built: None, tmp_path: Path) -> None:  # noqa: F811
    facts = _run_fixture("off", tmp_path)
    assert facts["package"] == "stand-in"
    _check_device_facts(facts, vendor=False)


@pytest.fixture(scope="module")
def vendor() -> Path:
    if not (VENDOR / "torch_npu/_init/core/module_loader.py").is_file():
        pytest.skip(
            f"the vendor's torch_npu is not installed in {VENDOR} (tools/gen_vendor_npu_core.py --install)"
        )
    return VENDOR


def test_the_fused_operators_on_the_device_with_the_vendors_package(
    vendor: Path,
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    facts = _run_fixture(str(vendor), tmp_path)
    assert facts["package"] == "vendor"
    _check_device_facts(facts, vendor=True)
    # torch_npu.optim's advised optimizers: the same parameters as torch.optim's after 4 steps
    for name, d in facts["optimizers"].items():
        assert d < 1e-6, (name, d)
    assert set(facts["optimizers"]) == {"NpuFusedAdamW", "NpuFusedAdam", "NpuFusedSGD"}
    # clip_grad_norm_fused_: the norm of all gradients, and the gradients scaled by torch's factor (< 1 here)
    assert facts["clip"] < 1e-6 and facts["clip_coef"] < 1


COMPILED = """
import torch, torch_npu
torch.manual_seed(0)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.rand(16) + 0.5)
        self.lin = torch.nn.Linear(16, 32)
    def forward(self, x):
        y = torch_npu.npu_swiglu(self.lin(torch_npu.npu_rms_norm(x, self.w, 1e-6)[0]))
        q = y.reshape(2, 4, 2, 8)
        return torch_npu.npu_fusion_attention(q, q, q, 2, "BSND", scale=0.3)[0].pow(2).sum()
m, x = M().npu(), torch.randn(2, 4, 16).npu()
eager = m(x)
eager.backward()
g = m.w.grad.clone()
m.w.grad = None
compiled = torch.compile(m)(x)
compiled.backward()
print("LOSSES", float(eager), float(compiled), float((g - m.w.grad).abs().max()))
"""


def test_the_stand_ins_operators_compile(rehearsal_built: None, tmp_path: Path) -> None:  # noqa: F811
    """torch.compile traces them with fake tensors: the stand-in registers the formulas for meta too (the
    vendor's package has its own meta kernels)."""
    script = tmp_path / "compiled.py"
    script.write_text(COMPILED)
    p = rehearse("--target", "npu", "--vendor-torch-npu", "off", str(script), timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    eager, compiled, dgrad = (
        float(t) for t in re.search(r"^LOSSES (\S+) (\S+) (\S+)$", p.stdout, re.M).groups()
    )  # type: ignore[union-attr]
    assert compiled == pytest.approx(eager, rel=1e-5) and dgrad < 1e-5
