"""The backward pass: a layer whose forward is right but whose backward is wrong, a changed op seen
in both directions, and op-level backward records named by module."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from probe_testlib import mlp, train
from torchport.probe.compare import compare_dumps


class _LinearFn(torch.autograd.Function):
    """y = x W^T + b, with a hand-written backward; `transpose_bug` uses W^T where W belongs.

    The bug is one a hand-written kernel or a vendor's backward can have: the forward is exact, and
    for a square weight the wrong gradient even has the right shape.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, transpose_bug):
        ctx.save_for_backward(x, weight)
        ctx.transpose_bug = transpose_bug
        return F.linear(x, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        w = weight.t() if ctx.transpose_bug else weight
        return grad.mm(w), grad.t().mm(x), grad.sum(0), None


class FnLinear(nn.Linear):
    def __init__(self, inner: nn.Linear, transpose_bug: bool) -> None:
        super().__init__(inner.in_features, inner.out_features)
        self.load_state_dict(inner.state_dict())
        self.transpose_bug = transpose_bug

    def forward(self, x):
        return _LinearFn.apply(x, self.weight, self.bias, self.transpose_bug)


def _mlp_with_fn_layer(bug: bool) -> nn.Sequential:
    m = mlp()
    m[2] = FnLinear(m[2], bug)  # layer "2" is square (32 x 32)
    return m


@pytest.mark.parametrize("full", [True, False])
def test_broken_backward_is_the_first_backward_divergence(tmp_path, full):
    ref = train(tmp_path / "ref", _mlp_with_fn_layer(False), full_tensors=full)
    got = train(tmp_path / "bug", _mlp_with_fn_layer(True), full_tensors=full)
    res = compare_dumps(got, ref)
    # Step 0's forward is bit-identical: only the gradients (and so step 1) change.
    assert all(r.identical for r in res.rows if r.direction == "forward" and r.a["step"] == 0)
    assert res.first_difference("forward").a["step"] == 1
    bwd = res.first_divergence("backward")
    assert bwd is not None
    assert (bwd.name, bwd.a["io"], bwd.a["step"]) == ("2", "out", 0)  # layer 2's grad_input
    if full:  # W^T against W, both random: the gradients point in unrelated directions
        assert bwd.status == "fail" and bwd.metrics["cosine"] < 0.9
    else:  # the statistics move less than 0.5, but the gradient arrived identical: "introduced here"
        assert bwd.status == "warn" and "introduced here" in bwd.reasons[0]
    # Everything earlier in the backward pass (the loss gradient, layers 4 and 3, layer 2's
    # grad_output) is bit-identical, and no forward row of the step before is flagged.
    before = [r for r in res.rows if r.a["seq"] < bwd.a["seq"]]
    assert all(r.identical for r in before)
    assert {r.name for r in before if r.direction == "backward"} == {"", "4", "3", "2"}
    fwd = res.first_divergence("forward")
    assert fwd is None or fwd.a["step"] == 1


def test_changed_op_is_the_first_divergence_forward_and_backward(tmp_path):
    """Module level, a changed op: layer 1 is tanh in the reference and hardtanh (clamp to
    [-1, 1]) in the run under test, e.g. a backend's fast substitute.

    Forward: layer 1's input is identical, its output is not, and for |x| > 0.06 tanh(x) and x
    differ by more than 0.1%, so most outputs move: msprobe's "error introduced here" rule
    (input within 0.1% for > 90% of the elements, output for < 60%) flags layer 1's output.
    Backward: the loss is a plain sum and a Linear layer's grad_input (grad_output @ W) does not
    depend on its activations, so the gradient is bit-identical down to layer 2; then layer 1
    multiplies it by 1 - tanh(x)^2 in the reference and by 1 in the run under test. That is a
    much larger change (up to tanh(x)^2, about 0.1 to 0.5 here) than in the forward pass (x - tanh(x)
    ~ x^3/3): the cosine drops below 0.99 with a max abs error above 0.001, msprobe's fail rule.
    """
    ref = train(tmp_path / "ref", mlp(), steps=1, full_tensors=True)
    changed = mlp()
    changed[1] = nn.Hardtanh()
    got = train(tmp_path / "got", changed, steps=1, full_tensors=True)
    res = compare_dumps(got, ref)
    for direction, status, reason in (("forward", "warn", "introduced here"), ("backward", "fail", "cosine")):
        first = res.first_divergence(direction)
        assert first is not None, direction
        # forward: layer 1's output; backward: layer 1's grad_input
        assert (first.name, first.a["io"]) == ("1", "out"), first.where()
        assert first.status == status and any(reason in r for r in first.reasons)
        assert res.first_difference(direction) is first
        assert all(r.identical for r in res.rows if r.direction == direction and r.a["seq"] < first.a["seq"])


def test_op_level_backward_records_name_the_module(tmp_path):
    """Op level: a backward op is named by the module its forward op ran in (and its autograd
    node); before, it carried only the node ("AddmmBackward0"), shared by every Linear."""
    dump = train(tmp_path / "op", mlp(), steps=1, level="op")
    recs = [json.loads(line) for line in (dump / "records.jsonl").read_text().splitlines()]
    bwd = [r for r in recs if r["dir"] == "backward"]
    assert bwd
    # (the loss's SumBackward0 runs only a view op, which is not recorded)
    assert {r["module"] for r in bwd} == {"0", "1", "2", "3", "4"}
    by_module = {(r["module"], r["node"]) for r in bwd}
    assert {("0", "AddmmBackward0"), ("1", "TanhBackward0"), ("4", "AddmmBackward0")} <= by_module
    # Backward runs the layers in reverse: the first mm is layer 4's, the last is layer 0's.
    mms = [r["module"] for r in bwd if r["name"] == "aten.mm.default" and r["io"] == "out"]
    assert mms[0] == "4" and mms[-1] == "0"


def test_op_level_broken_backward_is_located_in_its_module(tmp_path):
    """The custom Function's backward ops (node `_LinearFnBackward`) are named by layer 2, where
    the Function was applied, and the first backward divergence is there."""
    ref = train(tmp_path / "ref", _mlp_with_fn_layer(False), steps=1, level="op", full_tensors=True)
    got = train(tmp_path / "bug", _mlp_with_fn_layer(True), steps=1, level="op", full_tensors=True)
    res = compare_dumps(got, ref)
    bwd = res.first_divergence("backward")
    assert bwd is not None
    # The forward pass is identical up to there (the optimizer's update ops, recorded after the
    # backward pass, do differ).
    assert all(r.identical for r in res.rows if r.a["seq"] < bwd.a["seq"])
    assert (bwd.a["module"], bwd.a["node"]) == ("2", "_LinearFnBackward")
    assert "in 2 (_LinearFnBackward)" in bwd.where()
