"""torchport probe + compare on small seeded CPU models: the issue 6 quality bar."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn

from probe_testlib import mlp, train
from torchport.probe.compare import compare_dumps


def test_two_seeded_runs_pass_every_row(tmp_path):
    a = train(tmp_path / "a", mlp())
    b = train(tmp_path / "b", mlp())
    res = compare_dumps(a, b)
    assert not res.only_a and not res.only_b
    # 2 steps x (root + 5 layers) x forward in/out, plus the backward rows: nothing is missing.
    assert len(res.rows) == res.a.count == res.b.count > 24
    assert all(r.status == "pass" and r.identical for r in res.rows)
    assert res.first_divergence("forward") is None and res.first_divergence("backward") is None
    assert not res.diverged


@pytest.mark.parametrize("full", [True, False])
def test_weight_bug_is_first_divergence_forward_and_backward(tmp_path, full):
    ref = train(tmp_path / "ref", mlp(), full_tensors=full)
    bad = mlp()
    with torch.no_grad():
        bad[2].weight[3] += 0.5  # the bug: one output row of layer "2" is wrong
    got = train(tmp_path / "bad", bad, full_tensors=full)
    res = compare_dumps(got, ref)
    fwd = res.first_divergence("forward")
    assert fwd is not None and (fwd.name, fwd.a["io"], fwd.a["call"]) == ("2", "out", 0)
    # Layer 2's input is still identical, so nothing before its output can diverge.
    assert all(r.identical for r in res.rows if r.a["seq"] < fwd.a["seq"])
    # Backward: the loss is a plain sum, so the gradient at the model output is all ones in both
    # runs, and the backward of a Linear layer (grad_input = grad_output @ W) does not depend on
    # its activations: layers 4 and 3 hand back bit-identical gradients. Layer 2 multiplies by
    # its changed weight, so the first gradient that changes is layer 2's grad_input.
    bwd = res.first_divergence("backward")
    assert bwd is not None and (bwd.name, bwd.a["io"], bwd.a["call"]) == ("2", "out", 0)
    step0_bwd = [r for r in res.rows if r.direction == "backward" and r.a["step"] == 0]
    before = [r for r in step0_bwd if r.a["seq"] < bwd.a["seq"]]
    assert before and all(r.identical for r in before)
    assert {r.name for r in before} == {"", "4", "3", "2"}


def test_nan_in_the_middle_is_located(tmp_path):
    ref = train(tmp_path / "ref", mlp(), steps=1)
    broken = mlp()
    with torch.no_grad():
        broken[3].weight[5, 7] = math.nan  # row 5 of layer 3's output becomes NaN
    got = train(tmp_path / "nan", broken, steps=1)
    res = compare_dumps(got, ref)
    first = res.first_nonfinite_a
    assert first is not None
    assert (first["name"], first["dir"], first["io"]) == ("3", "forward", "out")
    # 8 samples, one NaN column each.
    assert first["nan"] == 8
    assert res.first_nonfinite_b is None
    fwd = res.first_divergence("forward")
    assert fwd is not None and fwd.name == "3" and any("NaN" in x for x in fwd.reasons)


def test_fp32_vs_bf16_autocast_flags_the_bf16_layers(tmp_path):
    """fp32 against CPU autocast-bf16, comparing full tensors with msprobe's default rules.

    Under autocast, nn.Linear runs in bfloat16: 8 significant bits, a relative rounding error of
    up to 2**-9 (about 0.2%) on every input, weight and output element. The first Linear gets a
    bit-identical fp32 input, so almost all of its outputs move by more than 0.1%: msprobe's
    "input within 0.1% for > 90% of elements, output for < 60%" rule marks it, and it is the
    first divergence. Layer 2 (Linear) sees inputs already 40% off by 0.1% and rounds again: the
    share of elements within 0.1% drops by more than 0.1, so it is flagged too. ReLU is exact
    (max(x, 0) rounds nothing; exact zeros even improve the share) and LayerNorm normalises the
    error it receives without adding a comparable amount, so neither is flagged. The last
    Linear's inputs are already so imprecise (85% beyond 0.1%) that its own rounding no longer
    stands out. Cosine stays above 0.999 everywhere: bf16 here loses digits, not direction, so
    no row fails the absolute rules and the backward pass is not flagged either.
    """

    def run(out, bf16):
        torch.manual_seed(0)
        m = nn.Sequential(
            nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.LayerNorm(128), nn.Linear(128, 10)
        )
        x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
        import torchport

        with torchport.probe(m, out=out, full_tensors=True):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                logits = m(x)
            nn.functional.cross_entropy(logits.float(), y).backward()
        return out

    res = compare_dumps(run(tmp_path / "bf16", True), run(tmp_path / "fp32", False))
    flagged_leaves = {r.name for r in res.rows if r.status != "pass" and r.a["leaf"]}
    assert flagged_leaves == {"0", "2"}
    assert all(r.status != "fail" for r in res.rows)
    fwd = res.first_divergence("forward")
    assert fwd is not None and (fwd.name, fwd.a["io"]) == ("0", "out")
    assert fwd.a["dtype"] == "bfloat16" and fwd.b["dtype"] == "float32"
    assert res.first_divergence("backward") is None
    # The backward numbers do differ, starting at the loss gradient (computed from bf16 logits).
    first_diff = res.first_difference("backward")
    assert first_diff is not None and first_diff.name == "" and first_diff.a["io"] == "in"


class Wrapper(nn.Module):
    """Stands in for DistributedDataParallel / torch.compile: keeps the model as `.module`."""

    def __init__(self, inner: nn.Module, attr: str) -> None:
        super().__init__()
        self.add_module(attr, inner)
        self.attr = attr

    def forward(self, x):
        return getattr(self, self.attr)(x)


@pytest.mark.parametrize("attr", ["module", "_orig_mod"])
def test_wrapper_prefixes_are_tolerated(tmp_path, attr):
    plain = train(tmp_path / "plain", mlp())
    inner = mlp()
    wrapped_model = Wrapper(inner, attr)
    wrapped = train(tmp_path / "wrapped", wrapped_model)
    names = {
        __import__("json").loads(line)["name"]
        for line in (wrapped / "records.jsonl").read_text().splitlines()
    }
    assert f"{attr}.2" in names  # the dump keeps the real module paths
    res = compare_dumps(wrapped, plain)
    assert not res.only_a and not res.only_b
    assert all(r.identical for r in res.rows)


def test_op_level_locates_the_changed_op(tmp_path):
    ref = train(tmp_path / "ref", mlp(), steps=1, level="op")
    changed = mlp()
    changed[1] = nn.Hardtanh()  # a changed op: tanh -> hardtanh
    got = train(tmp_path / "op", changed, steps=1, level="op")
    res = compare_dumps(got, ref)
    fwd = res.first_difference("forward")
    assert fwd is not None
    # aten.tanh and aten.hardtanh have no partner: the first aligned op whose numbers change is the
    # matmul of layer 2 consuming the changed activation.
    assert any(r["name"].startswith("aten.tanh") for r in res.only_b)
    assert any(r["name"].startswith("aten.hardtanh") for r in res.only_a)
    assert fwd.name == "aten.addmm.default" and fwd.a["module"] == "2" and fwd.a["io"] == "in"


@pytest.mark.filterwarnings("ignore:Using `torch.compile\\(module\\)` when there are global hooks")
def test_torch_compile_dump_aligns_with_eager(tmp_path):
    """A real torch.compile wrapper (backend="eager" keeps it fast): the dump names carry
    `_orig_mod.`, the hooks run eagerly (never traced), and compare aligns every record."""
    plain = train(tmp_path / "plain", mlp(), steps=1)
    compiled = torch.compile(mlp(), backend="eager")
    dump = train(tmp_path / "compiled", compiled, steps=1)
    res = compare_dumps(dump, plain)
    assert any(r.a["name"].startswith("_orig_mod.") for r in res.rows)
    assert not res.only_a and not res.only_b
    assert all(r.status == "pass" for r in res.rows)


@pytest.mark.parametrize("level", ["module", "op"])
def test_probing_does_not_change_the_run(tmp_path, level):
    """msprobe's users report that the tool changes results; the probe only reads tensors, so the
    trained weights are bit-identical with and without it (in-place ReLU included)."""

    def model():
        torch.manual_seed(0)
        return nn.Sequential(
            nn.Linear(16, 32), nn.ReLU(inplace=True), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4)
        )

    def run(probed: bool):
        m = model()
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        gen = torch.Generator().manual_seed(2)
        import contextlib

        import torchport

        ctx = torchport.probe(m, out=tmp_path / "d", level=level) if probed else contextlib.nullcontext()
        with ctx:
            for _ in range(3):
                loss = m(torch.randn(8, 16, generator=gen)).pow(2).mean()
                loss.backward()
                opt.step()
                opt.zero_grad()
        return [p.detach().clone() for p in m.parameters()]

    plain, probed = run(False), run(True)
    assert all(torch.equal(a, b) for a, b in zip(plain, probed))
    assert (tmp_path / "d" / "manifest.json").exists()


def test_parameter_gradients_are_reported_apart(tmp_path):
    ref = train(tmp_path / "ref", mlp(), steps=1, full_tensors=True, param_grads=True)
    bad = mlp()
    with torch.no_grad():
        bad[2].weight[3] += 0.5
    got = train(tmp_path / "bad", bad, steps=1, full_tensors=True, param_grads=True)
    res = compare_dumps(got, ref)
    grads = {r.name: r for r in res.rows if r.a["io"] == "grad"}
    assert set(grads) == {f"{i}.{p}" for i in (0, 2, 3, 4) for p in ("weight", "bias")}
    # dL/dW2 = grad_output(2)^T @ input(2): both factors are unchanged by the bug (see the weight
    # bug test above), so layer 2's own gradients are bit-identical; layers 3 and 4 multiply by
    # inputs that changed. Bias gradients are sums of grad_output, unchanged from layer 2 up.
    assert grads["2.weight"].identical and grads["2.bias"].identical
    assert grads["3.bias"].identical and grads["4.bias"].identical
    assert not grads["3.weight"].identical and not grads["4.weight"].identical
    # Autograd accumulates the last layer's gradients first.
    first = res.first_difference("param")
    assert first is not None and first.name == "4.weight"
    # The activation-gradient flow still points at layer 2.
    bwd = res.first_divergence("backward")
    assert bwd is not None and bwd.name == "2"


def test_real_ddp_dump_aligns_with_plain(tmp_path):
    """A one-process gloo DistributedDataParallel run: names carry `module.`, compare aligns them."""
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    plain = train(tmp_path / "plain", mlp(), steps=1)
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        ddp = nn.parallel.DistributedDataParallel(mlp())
        dump = train(tmp_path / "ddp", ddp, steps=1)
    finally:
        dist.destroy_process_group()
    res = compare_dumps(dump, plain)
    assert {r.a["name"] for r in res.rows} >= {"module", "module.2"}
    assert not res.only_a and not res.only_b
    assert all(r.identical for r in res.rows)


def test_worker_threads_never_parse_npy_headers_at_once(tmp_path, monkeypatch):
    """numpy parses a .npy header with ast.literal_eval, which CPython < 3.11.9 cannot run in two
    threads at once (python/cpython#106905: "AST constructor recursion depth mismatch", seen in CI
    under `compare --workers 2`). The header reads of the worker threads are serialised."""
    import threading
    import time

    import numpy as np

    ref = train(tmp_path / "ref", mlp(), full_tensors=True)
    bad = mlp()
    with torch.no_grad():
        bad[0].weight += 0.25  # every row after layer 0 differs, so every tensor pair is read
    got = train(tmp_path / "bad", bad, full_tensors=True)

    real = np.lib.format.read_array_header_1_0
    inside, most, calls = [0], [0], [0]
    guard = threading.Lock()

    def slow_header(f, *args, **kwargs):
        with guard:
            inside[0] += 1
            calls[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.002)  # long enough for another worker to arrive
        try:
            return real(f, *args, **kwargs)
        finally:
            with guard:
                inside[0] -= 1

    monkeypatch.setattr(np.lib.format, "read_array_header_1_0", slow_header)
    res = compare_dumps(got, ref, workers=4)
    assert res.first_divergence("forward") is not None
    assert calls[0] > 8  # the full tensors were read, in the pool
    assert most[0] == 1
