"""check-ops classification details: generic kernels, structured delegates, unknowns, the measured steps and
the fused-API advice (CPU, torch 2.13)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchport
from torchport.check_ops import check_callable

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "check_ops"
sys.path.insert(0, str(FIXTURES))
from models import example  # noqa: E402


def row(report, target, op):
    rows = {r.op: r for r in report.target(target).rows}
    assert op in rows, f"{op} not reported for {target}: {sorted(rows)}"
    return rows[op]


# --- generic CompositeExplicitAutograd kernels beside a CPU kernel ----------------------------------------


def test_pixel_shuffle_runs_its_generic_kernel_where_not_listed():
    # native_functions.yaml: pixel_shuffle has `CPU: pixel_shuffle_cpu`, `MPS: pixel_shuffle_mps` and
    # `CompositeExplicitAutogradNonFunctional: math_pixel_shuffle`. op-plugin, mlu_functions.yaml and
    # musa_functions.yaml do not list it, so those devices run math_pixel_shuffle (view ops and clone), not
    # the CPU fallback.
    x = torch.randn(1, 8, 4, 4)
    rep = check_callable(
        lambda: (F.pixel_shuffle(x, 2), F.pixel_unshuffle(x, 2)), ["npu", "mlu", "musa", "mps"]
    )
    for target in ("npu", "mlu", "musa"):
        for op in ("aten::pixel_shuffle", "aten::pixel_unshuffle"):
            r = row(rep, target, op)
            assert r.status == "native", (target, op, r.reason)
            assert "native via composite" in r.reason and "clone" in r.reason
    assert "listed in native_functions.yaml" in row(rep, "mps", "aten::pixel_shuffle").reason
    assert rep.target("npu").host_share_range == (0.0, 0.0)


def test_addr_on_musa_runs_math_addr():
    # addr: `CPU, CUDA: addr`, `MPS: addr_mps`, `CompositeExplicitAutograd: math_addr`; musa does not list it.
    v = torch.randn(3)
    rep = check_callable(lambda: torch.addr(torch.zeros(3, 3), v, v), ["musa", "npu"])
    assert row(rep, "musa", "aten::addr").status == "native"
    assert "generic kernel" in row(rep, "musa", "aten::addr").reason
    assert "listed in op_plugin_functions.yaml" in row(rep, "npu", "aten::addr").reason


def test_generic_kernel_that_calls_a_missing_op_is_a_fallback():
    # bitwise_right_shift.Tensor is structured (its generic kernel calls .Tensor_out); op-plugin gates
    # .Tensor_out with `op_api: [v2.7, newest]` and does not list the functional overload.
    a = torch.tensor([8, 16], dtype=torch.int32)
    b = torch.tensor([1, 2], dtype=torch.int32)
    old = check_callable(lambda: torch.bitwise_right_shift(a, b), ["npu"], torch_version="2.6")
    new = check_callable(lambda: torch.bitwise_right_shift(a, b), ["npu"], torch_version="2.7")
    r = row(old, "npu", "aten::bitwise_right_shift.Tensor")
    assert r.status == "fallback" and "bitwise_right_shift.Tensor_out" in r.reason
    assert row(new, "npu", "aten::bitwise_right_shift.Tensor").status == "native"


# --- structured delegates: a dispatcher fact, pinned -----------------------------------------------------


@pytest.mark.parametrize(
    "op", ["aten::argmax", "aten::cumsum_", "aten::gcd", "aten::bitwise_left_shift.Tensor"]
)
def test_privateuse1_runs_the_generic_structured_kernel_not_the_cpu_fallback(op):
    # Why an unlisted functional/in-place overload is native when its out= overload is: the dispatcher's
    # PrivateUse1 (npu, mlu, musa) entry is the CompositeExplicitAutogradNonFunctional kernel torchgen
    # generates for a structured op, which calls the out= kernel; a backend fallback only comes after it.
    table = torch._C._dispatch_dump_table(op)
    line = next(x for x in table.splitlines() if x.startswith("PrivateUse1:"))
    assert "RegisterCompositeExplicitAutogradNonFunctional" in line and "default backend kernel" in line


def test_argmax_on_npu_is_native_through_its_listed_out_overload():
    # op-plugin lists argmax.out (all_version) but not argmax.
    x = torch.randn(4, 5)
    rep = check_callable(lambda: torch.argmax(x, 1), ["npu"])
    r = row(rep, "npu", "aten::argmax")
    assert r.status == "native" and "argmax.out" in r.reason and "not listed itself" in r.reason


# --- what the data cannot know is "unknown" -------------------------------------------------------------


_lib = torch.library.Library("aten", "FRAGMENT")
_lib.define("tp_cpp_only(Tensor self) -> Tensor")
_lib.impl("tp_cpp_only", lambda x: x.clone(), "CPU")


def test_aten_op_registered_outside_native_functions_yaml_is_unknown():
    # An aten operator registered in C++ (here: from Python, the same to the dispatcher) is in no
    # native_functions.yaml, so no vendor YAML can list it: unknown, not fallback.
    x = torch.randn(3)
    rep = check_callable(lambda: torch.ops.aten.tp_cpp_only(x), ["npu", "mlu"])
    for target in ("npu", "mlu"):
        r = row(rep, target, "aten::tp_cpp_only")
        assert r.status == "unknown" and "outside native_functions.yaml" in r.reason


def test_host_share_is_a_range_that_counts_unknowns_at_the_top():
    model, inputs = example("lgamma")
    rep = torchport.check_ops(model, inputs, targets=["npu", "xpu"])
    lo, hi = rep.target("xpu").host_share_range  # lgamma is unknown on torch 2.13's partial xpu list
    assert lo == 0.0 and 0.0 < hi <= 1.0
    lo, hi = rep.target("npu").host_share_range  # lgamma and digamma fall back on npu
    assert 0.0 < lo <= hi <= 1.0
    assert "(fallback + unknown ops)" in rep.to_text()
    assert rep.to_dict()["targets"][1]["host_time_share_range"][0] == 0.0


# --- the host share is a share of the measured steps -----------------------------------------------------


def test_setup_before_the_first_forward_is_not_in_the_host_share():
    # lgamma (a CPU fallback on npu) runs only while preparing the data, before the first forward; the
    # step itself is all native. The old estimate divided by the ops' time of the whole run and reported it.
    model = nn.Linear(64, 64)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def run():
        data = torch.lgamma(torch.rand(256, 64) + 1.0)  # setup
        for _ in range(2):
            model(data).sum().backward()
            opt.step()
            opt.zero_grad()

    rep = check_callable(run, ["npu"])
    lg = row(rep, "npu", "aten::lgamma")
    assert lg.status == "fallback" and lg.kernel_us > 0 and lg.step_us == 0
    assert rep.target("npu").host_share_range == (0.0, 0.0)
    assert rep.phases["setup"] >= 2 and rep.phases["steps"] > 0 and rep.phases["after"] == 0
    # the denominator is the steps' wall time: at least the time of the operators inside them
    t = rep.target("npu")
    assert t.steps_us >= sum(r.step_us for r in t.rows) > 0
    assert 0 < rep.steps_wall_est_s <= rep.steps_wall_s <= rep.traced_wall_s
    assert "setup before: " in rep.to_text()


def test_fallback_inside_the_steps_is_counted_against_step_time():
    model, inputs = example("lgamma")
    rep = torchport.check_ops(model, inputs, targets=["npu"], steps=2)
    t = rep.target("npu")
    fb = sum(r.step_us for r in t.rows if r.status == "fallback")
    assert fb > 0 and t.host_share == pytest.approx(fb / t.steps_us)
    assert rep.phases["setup"] == 0  # check_ops' step starts with the forward


# --- fused alternatives (Ascend's migration tool) ---------------------------------------------------------


def test_npu_advises_fused_linear_and_optimizer():
    # affinity_list_1_11_0.json / precision_performance_advice.json: torch.nn.Linear -> NpuLinear
    # (torch.npu_linear), torch.optim.Adam -> apex.optimizers.NpuFusedAdam.
    model, inputs = example("cnn")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    rep = torchport.check_ops(model, inputs, targets=["npu", "mlu"], optimizer=opt)
    adv = {a.what: a for a in rep.target("npu").advice}
    assert "npu_linear" in adv["aten::linear"].use and adv["aten::linear"].calls == 1
    assert adv["aten::linear"].source.endswith("precision_performance_advice.json")
    assert adv["torch.optim.Adam"].use == "apex.optimizers.NpuFusedAdam"
    assert rep.target("mlu").advice == []  # the advice is Ascend's
    text = rep.to_text()
    assert "advice: torch.optim.Adam" in text and "NpuFusedAdam" in text
    # check_ops' own lr=0 SGD is not the user's choice: no optimizer advice for it
    rep2 = torchport.check_ops(model, inputs, targets=["npu"])
    assert all(not a.what.startswith("torch.optim") for a in rep2.target("npu").advice)


def test_fused_alternative_goes_into_the_fix_column():
    # torch.roll -> torch_npu.contrib.function.roll (affinity_list_1_11_0.json); roll is in the report's
    # rows on npu, so its fix carries the advice (shown with --show-native, in JSON and CSV).
    x = torch.randn(4, 4)
    rep = check_callable(lambda: torch.roll(x, 1, 0), ["npu"])
    r = row(rep, "npu", "aten::roll")
    assert "torch_npu.contrib.function.roll" in r.fix and "affinity_list_1_11_0.json" in r.fix
