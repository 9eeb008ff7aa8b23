"""check_ops on small models (CPU, torch 2.13): what a user reads in the report for each target."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import torchport
from torchport.check_ops import check_callable

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "check_ops"
sys.path.insert(0, str(FIXTURES))
from models import example  # noqa: E402

TARGETS = ["npu", "mlu", "musa", "mps", "xpu"]


def site(tag: str) -> str:
    """file:line of the fixture line marked `# site: tag`."""
    path = FIXTURES / "models.py"
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if line.rstrip().endswith(f"# site: {tag}"):
            return f"{path}:{i}"
    raise AssertionError(tag)


@pytest.fixture(scope="module")
def reports():
    out = {}
    for name in ("cnn", "lstm", "block", "f64", "lgamma"):
        model, inputs = example(name)
        out[name] = torchport.check_ops(model, inputs, targets=TARGETS)
    return out


def rows(report, target):
    return {r.op: r for r in report.target(target).rows}


def row(report, target, op):
    r = rows(report, target).get(op)
    assert r is not None, f"{op} not reported for {target}: {sorted(rows(report, target))}"
    return r


# --- the expected operators are found ----------------------------------------------------------------


def test_cnn_ops_found(reports):
    r = rows(reports["cnn"], "npu")
    expected = (
        "aten::convolution",
        "aten::convolution_backward",
        "aten::max_pool2d_with_indices",
        "aten::addmm",
    )
    for op in expected:
        assert op in r, op
    assert r["aten::convolution"].calls == 2  # conv1 and conv2
    assert r["aten::convolution"].dtypes == ["float32"]


def test_block_ops_found(reports):
    r = rows(reports["block"], "npu")
    for op in ("aten::scaled_dot_product_attention", "aten::native_layer_norm", "aten::gelu", "aten::addmm"):
        assert op in r, op
    assert r["aten::native_layer_norm"].calls == 2  # ln1, ln2


def test_optimizer_step_is_traced(reports):
    # The default SGD step updates each parameter in place.
    assert row(reports["cnn"], "npu", "aten::add_.Tensor").calls == 8  # 2 convs, group norm, fc: w and b


# --- composite operators that vendors implement are credited -------------------------------------------


def test_lstm_credited_on_vendors_that_implement_it(reports):
    for target in ("npu", "mlu"):
        r = rows(reports["lstm"], target)
        assert r["aten::lstm.input"].status == "native"
        assert "aten::mkldnn_rnn_layer" not in r  # the CPU kernel inside the vendor's lstm
    # MPS runs lstm through its own _lstm_mps kernel
    assert "_lstm_mps" in row(reports["lstm"], "mps", "aten::lstm.input").reason


def test_group_norm_credited_on_mlu_but_not_npu(reports):
    # mlu_functions.yaml lists group_norm (a CompositeImplicitAutograd op); op-plugin lists only
    # native_group_norm, so npu is credited at that level.
    mlu, npu = rows(reports["cnn"], "mlu"), rows(reports["cnn"], "npu")
    assert mlu["aten::group_norm"].status == "native"
    assert "aten::native_group_norm" not in mlu
    assert "aten::group_norm" not in npu
    assert npu["aten::native_group_norm"].status == "native"


def test_sdpa_credited_and_cpu_flash_kernel_hidden(reports):
    for target in ("npu", "mlu", "musa", "mps"):
        r = rows(reports["block"], target)
        assert r["aten::scaled_dot_product_attention"].status == "native", target
        assert "aten::_scaled_dot_product_flash_attention_for_cpu" not in r
    assert (
        "_scaled_dot_product_attention_math_for_mps"
        in row(reports["block"], "mps", "aten::scaled_dot_product_attention").reason
    )


def test_linear_credited_on_mps_only(reports):
    # native_functions.yaml has `MPS: _mps_linear` for linear; npu runs addmm.
    assert row(reports["cnn"], "mps", "aten::linear").status == "native"
    assert "aten::linear" not in rows(reports["cnn"], "npu")


# --- ops the lists show missing are fallbacks ---------------------------------------------------------


def test_lgamma_falls_back_on_npu_and_mlu(reports):
    rep = reports["lgamma"]
    for target, env in (("npu", "TORCH_NPU_FALLBACK_CPU_DISABLE=1"), ("mlu", "ENABLE_FALLBACK_TO_CPU=0")):
        r = row(rep, target, "aten::lgamma")
        assert r.status == "fallback"
        assert env in r.fix and "host CPU" in r.fix
        assert row(rep, target, "aten::digamma").status == "fallback"  # lgamma's backward
        t = rep.target(target)
        assert 0.0 < t.host_share <= 1.0
        ops_share, calls_share = t.share("native")
        assert ops_share < 1.0 and calls_share < 1.0
    for target in ("musa", "mps"):
        assert row(rep, target, "aten::lgamma").status == "native"
        assert rep.target(target).share("native") == (1.0, 1.0)
        assert rep.target(target).host_share == 0.0


def test_xpu_reports_unknown_not_fallback_for_a_partial_list(reports):
    r = row(reports["lgamma"], "xpu", "aten::lgamma")
    assert r.status == "unknown"
    assert all(x.status != "fallback" for x in reports["cnn"].target("xpu").rows)


def test_xpu_always_fallback_op():
    a = torch.randn(4, 4)
    rep = check_callable(lambda: torch.linalg.eig(a), ["xpu", "mps"])
    assert row(rep, "xpu", "aten::linalg_eig").status == "fallback"
    assert "PYTORCH_ENABLE_XPU_FALLBACK=1" in row(rep, "xpu", "aten::linalg_eig").fix
    # native_functions.yaml: linalg_eig has only `CPU, CUDA` keys, so mps lacks it (an error by default)
    r = row(rep, "mps", "aten::linalg_eig")
    assert r.status == "fallback" and "raises on mps" in r.fix and "PYTORCH_ENABLE_MPS_FALLBACK=1" in r.fix


def test_torch_version_gate_changes_the_verdict():
    a = torch.tensor([8, 16], dtype=torch.int32)
    b = torch.tensor([1, 2], dtype=torch.int32)
    out = torch.empty(2, dtype=torch.int32)

    def step():
        torch.bitwise_right_shift(a, b, out=out)

    old = check_callable(step, ["npu"], torch_version="2.6")
    new = check_callable(step, ["npu"], torch_version="2.7")
    assert row(old, "npu", "aten::bitwise_right_shift.Tensor_out").status == "fallback"
    assert row(new, "npu", "aten::bitwise_right_shift.Tensor_out").status == "native"


# --- dtypes -------------------------------------------------------------------------------------------


def test_float64_flagged_on_npu_and_mps_only(reports):
    rep = reports["f64"]
    for target in ("npu", "mps"):
        r = row(rep, target, "aten::mul.Tensor")
        assert r.status == "unsupported_dtype"
        assert "float64" in r.dtypes and "float32" in r.fix
        assert r.site == site("f64_mul")
    for target in ("mlu", "musa"):
        assert row(rep, target, "aten::mul.Tensor").status == "native"
    # the float32 embedding lookup is not flagged
    assert row(rep, "npu", "aten::embedding").status == "native"


# --- call sites -----------------------------------------------------------------------------------------


def test_call_sites_point_at_the_user_line(reports):
    assert row(reports["cnn"], "npu", "aten::convolution").site == site("cnn_conv1")
    assert row(reports["cnn"], "npu", "aten::max_pool2d_with_indices").site == site("cnn_pool")
    assert row(reports["lstm"], "npu", "aten::lstm.input").site == site("lstm_call")
    assert row(reports["block"], "npu", "aten::scaled_dot_product_attention").site == site("sdpa")
    assert row(reports["lgamma"], "npu", "aten::lgamma").site == site("lgamma")


def test_backward_ops_point_at_their_forward_line(reports):
    # digamma is lgamma's derivative; threshold_backward is relu's; the profiler links each backward node
    # to the forward op that created it.
    assert row(reports["lgamma"], "npu", "aten::digamma").site == site("lgamma")
    assert row(reports["cnn"], "npu", "aten::threshold_backward").site == site("cnn_norm")
    assert row(reports["cnn"], "npu", "aten::max_pool2d_with_indices_backward").site == site("cnn_pool")
    assert row(reports["lstm"], "npu", "aten::embedding_dense_backward").site == site("lstm_call")


def test_each_call_is_counted_once(reports):
    # relu runs once per step; the detach autograd does for relu's saved output is not a second relu.
    assert row(reports["cnn"], "npu", "aten::relu").calls == 1
    assert row(reports["cnn"], "npu", "aten::native_group_norm").calls == 1


def test_model_parameters_are_untouched():
    model, inputs = example("cnn")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    torchport.check_ops(model, inputs, targets=["npu"])
    for k, v in model.state_dict().items():
        if v.is_floating_point() and k in before:
            assert torch.equal(v, before[k]), k
    assert all(p.grad is None for p in model.parameters())


def test_import_torchport_stays_cheap():
    import subprocess

    code = "import sys, torchport; print('torch' in sys.modules); print(callable(torchport.check_ops))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]


def test_keyword_inputs_and_custom_loss():
    model, (tokens,) = example("lstm")
    seen = []

    def loss_fn(out):
        seen.append(tuple(out.shape))
        return out.pow(2).mean()

    rep = torchport.check_ops(model, {"tokens": tokens}, targets=["npu"], loss_fn=loss_fn)
    assert seen == [(2, 3)]
    assert row(rep, "npu", "aten::pow.Tensor_Scalar").site.endswith(f"{Path(__file__).name}:{_pow_line()}")


def _pow_line() -> int:
    src = Path(__file__).read_text().splitlines()
    return next(i for i, line in enumerate(src, 1) if "return out.pow(2).mean()" in line)


def test_own_profiler_session_is_reported_not_hidden():
    # A traced function that runs torch.profiler itself ends check-ops' own session (kineto has one).
    model, inputs = example("cnn")

    def step():
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            model(*inputs).sum().backward()

    rep = check_callable(step, ["npu"])
    assert rep.calls > 0
    assert any("missing from the profile" in n for n in rep.notes)
    assert "missing from the profile" in rep.to_text()


def test_no_note_when_every_call_is_profiled(reports):
    assert reports["cnn"].notes == []


def test_copy_needs_the_device_copy_kernel():
    # copy_ is a generic kernel that calls _copy_from for a device tensor (Copy.cpp). musa_functions.yaml
    # lists _copy_from; op-plugin lists copy_ itself (npu_native_functions.yaml); torch 2.13's partial XPU
    # list has neither.
    a, b = torch.ones(3), torch.zeros(3)
    rep = check_callable(lambda: b.copy_(a), ["npu", "musa", "xpu"])
    assert row(rep, "npu", "aten::copy_").status == "native"
    assert "_copy_from" in row(rep, "musa", "aten::copy_").reason
    assert row(rep, "xpu", "aten::copy_").status == "unknown"
