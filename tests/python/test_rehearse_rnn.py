"""LSTM and GRU on the rehearsal device. ATen computes their cells with the fused operators
(_thnn_fused_lstm_cell, _thnn_fused_gru_cell and their backward ones) on a PrivateUse1 device, which torch
implements for CUDA only: the rehearsal device has kernels of its own for them (csrc/rnn.cc), judged and
counted as the target's lists say (docs/rehearse.md). Without them every nn.LSTM / nn.GRU raised
`Could not run 'aten::_thnn_fused_lstm_cell' with arguments from the 'CPU' backend` while the summary said
all was well; an operator that raises NotImplementedError on the device is now reported as refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from rehearse_testlib import read_report, rehearsal_built, rehearse  # noqa: F401

# Each case: the same module on the CPU and on the device (a copy, same seed), the same inputs and initial
# states; forward outputs, final states and the gradients of parameters, input and initial states are equal
# (float32 default tolerances).
MODULES = """
import copy
import sys
import torch
from torch import nn
from torch.testing import assert_close

DEV = sys.argv[1]
CASES = [
    ("lstm_2layers", lambda: nn.LSTM(4, 8, num_layers=2), (5, 3, 4)),
    ("lstm_bidir_batch_first", lambda: nn.LSTM(4, 8, num_layers=2, bidirectional=True, batch_first=True),
     (3, 5, 4)),
    ("lstm_no_bias", lambda: nn.LSTM(4, 8, num_layers=2, bias=False), (5, 3, 4)),
    ("lstm_proj", lambda: nn.LSTM(4, 8, proj_size=3), (5, 3, 4)),
    ("gru_2layers", lambda: nn.GRU(4, 8, num_layers=2), (5, 3, 4)),
    ("gru_bidir_batch_first", lambda: nn.GRU(4, 8, num_layers=2, bidirectional=True, batch_first=True),
     (3, 5, 4)),
    ("gru_no_bias", lambda: nn.GRU(4, 8, num_layers=2, bias=False), (5, 3, 4)),
    ("lstm_cell", lambda: nn.LSTMCell(4, 8), (3, 4)),
    ("lstm_cell_no_bias", lambda: nn.LSTMCell(4, 8, bias=False), (3, 4)),
    ("gru_cell", lambda: nn.GRUCell(4, 8), (3, 4)),
    ("gru_cell_no_bias", lambda: nn.GRUCell(4, 8, bias=False), (3, 4)),
]


def states(m, shape):
    # initial states, random, requiring grad; None: the module's zeros
    if isinstance(m, (nn.LSTMCell, nn.GRUCell)):
        h = torch.randn(shape[0], m.hidden_size)
        return (h, torch.randn_like(h)) if isinstance(m, nn.LSTMCell) else h
    batch = shape[0] if m.batch_first else shape[1]
    layers = m.num_layers * (2 if m.bidirectional else 1)
    h = torch.randn(layers, batch, m.proj_size or m.hidden_size)
    return (h, torch.randn(layers, batch, m.hidden_size)) if isinstance(m, nn.LSTM) else h


def flat(x):
    return list(x) if isinstance(x, tuple) else [x]


def run(m, x, init, weights, dev):
    m = m.to(dev)
    x = x.to(dev, copy=True).requires_grad_()
    init = [t.to(dev, copy=True).requires_grad_() for t in init]
    if isinstance(m, (nn.LSTMCell, nn.GRUCell)):
        out = flat(m(x, tuple(init) if len(init) == 2 else init[0]))
        # a second step from the first one's states
        out = flat(m(x * 0.5, tuple(out) if len(out) == 2 else out[0]))
    else:
        y, hidden = m(x, tuple(init) if len(init) == 2 else init[0])
        out = [y, *flat(hidden)]
    loss = sum((o * w.to(dev)).sum() for o, w in zip(out, weights))
    loss.backward()
    grads = [x.grad, *(t.grad for t in init)] + [p.grad for p in m.parameters()]
    return [o.detach().cpu() for o in out], [g.cpu() for g in grads], [n for n, _ in m.named_parameters()]


for name, make, shape in CASES:
    torch.manual_seed(0)
    m = make()
    x = torch.randn(*shape)
    init = flat(states(m, shape))
    with torch.no_grad():
        probe = flat(m(x))
    if not isinstance(m, (nn.LSTMCell, nn.GRUCell)):
        probe = [probe[0], *flat(probe[1])]
    weights = [torch.randn_like(o) for o in probe]  # every output counts, with its own weights
    out_cpu, grads_cpu, names = run(copy.deepcopy(m), x, init, weights, "cpu")
    out_dev, grads_dev, _ = run(copy.deepcopy(m), x, init, weights, DEV)
    for i, (a, b) in enumerate(zip(out_dev, out_cpu)):
        assert_close(a, b, msg=lambda s, i=i: f"{name} output {i}: {s}")
    labels = ["input", *(f"initial state {i}" for i in range(len(init))), *names]
    assert len(grads_dev) == len(grads_cpu) == len(labels)
    for label, a, b in zip(labels, grads_dev, grads_cpu):
        assert_close(a, b, msg=lambda s, label=label: f"{name} grad of {label}: {s}")
    print("ok", name, flush=True)
"""

# A word-language-model-like training loop (pytorch/examples word_language_model, mnist_rnn): embedding, a
# 2-layer LSTM or GRU, a linear decoder, Adam; the losses of each step on the device and on the CPU.
TRAIN = """
import sys
import torch
from torch import nn
from torch.testing import assert_close

DEV, KIND = sys.argv[1], sys.argv[2]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        rnn = nn.LSTM if KIND == "lstm" else nn.GRU
        self.rnn = rnn(8, 16, num_layers=2, batch_first=True)
        self.dec = nn.Linear(16, 20)

    def forward(self, x):
        y, _ = self.rnn(self.emb(x))
        return self.dec(y)


def train(dev):
    torch.manual_seed(0)
    m = Model().to(dev)
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    data = torch.randint(0, 20, (4, 4, 9))
    losses = []
    for step in range(4):
        x, y = data[step, :, :-1].to(dev), data[step, :, 1:].to(dev)
        loss = nn.functional.cross_entropy(m(x).reshape(-1, 20), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(m.parameters(), 0.5)
        opt.step()
        losses.append(loss.item())
    return torch.tensor(losses), {k: v.cpu() for k, v in m.state_dict().items()}


cpu_losses, cpu_state = train("cpu")
dev_losses, dev_state = train(DEV)
print("cpu", cpu_losses.tolist())
print("dev", dev_losses.tolist())
assert_close(dev_losses, cpu_losses)
for k in cpu_state:
    assert_close(dev_state[k], cpu_state[k], msg=lambda s, k=k: f"{k}: {s}")
print("ok", flush=True)
"""


def _native(report: dict, op: str) -> int:
    return sum(r["calls"] for r in report["ops"]["native"] if r["op"] == op)


def test_lstm_gru_and_their_cells_equal_the_cpu(rehearsal_built: None, tmp_path: Path) -> None:  # noqa: F811
    script = tmp_path / "rnn_modules.py"
    script.write_text(MODULES)
    report = tmp_path / "r.json"
    p = rehearse("--target", "mlu", "--report", str(report), str(script), "mlu", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("ok ") == 11, p.stdout
    rep = read_report(report)
    assert not rep["ops"]["refused"], rep["ops"]["refused"]
    for op in ("_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell_backward_impl"):
        assert _native(rep, f"aten::{op}") > 0, rep["ops"]["native"]
    for op in ("_thnn_fused_gru_cell", "_thnn_fused_gru_cell_backward"):
        assert _native(rep, f"aten::{op}") > 0, rep["ops"]["native"]


@pytest.mark.parametrize(
    ("target", "kind"), [("npu", "lstm"), ("npu", "gru"), ("musa", "lstm"), ("musa", "gru")]
)
def test_a_training_loop_gives_the_cpu_losses(
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
    target: str,
    kind: str,
) -> None:
    script = tmp_path / "train_rnn.py"
    script.write_text(TRAIN)
    report = tmp_path / "r.json"
    p = rehearse("--target", target, "--report", str(report), str(script), target, kind, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ok" in p.stdout.splitlines(), p.stdout
    rep = read_report(report)
    assert not rep["ops"]["refused"], rep["ops"]["refused"]
    cell = f"aten::_thnn_fused_{kind}_cell"
    backward = cell + ("_backward_impl" if kind == "lstm" else "_backward")
    # 2 layers x 8 time steps x 4 steps
    assert _native(rep, cell) == 64, rep["ops"]["native"]
    calls = {r["op"]: r["calls"] for st in ("native", "fallback") for r in rep["ops"][st]}
    assert calls.get(backward) == 64, calls
    fallback = {r["op"] for r in rep["ops"]["fallback"]}
    if (target, kind) == ("npu", "gru"):
        # torch_npu lists _thnn_fused_gru_cell but not its backward (it implements gru as a whole, a
        # composite the rehearsal decomposes: docs/rehearse.md, "Known gap: composite operators"), so the
        # backward runs with torch_npu's fallback warning, counted at the backward() call.
        assert backward in fallback, fallback
        assert f"The operator '{backward}' is not currently supported on the NPU backend" in p.stderr
    else:
        assert backward not in fallback, fallback


def test_an_unlisted_rnn_backward_is_an_error_under_strict(rehearsal_built: None, tmp_path: Path) -> None:  # noqa: F811
    """The fused kernels are the device's own, but judged like any operator: torch_npu's lists lack
    _thnn_fused_gru_cell_backward, so --strict refuses it as the vendor's switch would."""
    script = tmp_path / "train_rnn.py"
    script.write_text(TRAIN)
    p = rehearse("--target", "npu", "--strict", str(script), "npu", "gru", cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert (
        "NotImplementedError: The operator 'aten::_thnn_fused_gru_cell_backward' is not currently supported "
        "on the NPU backend and its CPU fallback is disabled (TORCH_NPU_FALLBACK_CPU_DISABLE=1)" in p.stderr
    ), p.stderr
    p = rehearse("--target", "npu", "--strict", str(script), "npu", "lstm", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr


NOT_IMPLEMENTED = """
import torch
x = torch.ones(4, device="npu")
try:
    torch.ops.aten._fused_dropout(x, 0.5)  # CUDA's kernel only: no CPU kernel to run it with
except NotImplementedError as e:
    print("raised:", e)
print("after", (x * 2).sum().item())
"""


def test_an_op_that_raises_not_implemented_is_reported_refused(rehearsal_built: None, tmp_path: Path) -> None:  # noqa: F811
    """Before the RNN kernels, _thnn_fused_lstm_cell failed in the CPU kernel the device forwards to and the
    summary counted nothing; any such operator is now a refused one, named, with its call site."""
    script = tmp_path / "nie.py"
    script.write_text(NOT_IMPLEMENTED)
    report = tmp_path / "r.json"
    p = rehearse("--target", "npu", "--report", str(report), str(script), cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (
        "raised: aten::_fused_dropout cannot run on the rehearsal npu device, which runs operators with "
        "PyTorch's CPU kernels: Could not run 'aten::_fused_dropout' with arguments from the 'CPU' backend. "
        "[torchport rehearse: counted as refused;" in p.stdout
    ), p.stdout
    assert "after 8.0" in p.stdout
    rep = read_report(report)
    [row] = rep["ops"]["refused"]
    assert (row["op"], row["calls"]) == ("aten::_fused_dropout", 1)
    assert [s["site"].rsplit("/", 1)[-1] for s in row["sites"]] == ["nie.py:5"]
    assert row["error"].startswith("NotImplementedError: Could not run 'aten::_fused_dropout'")
    # not counted as a fallback call that ran
    assert all(r["op"] != "aten::_fused_dropout" for r in rep["ops"]["fallback"])
    assert rep["counts"]["refused"] == {"ops": 1, "calls": 1}
    assert ", 1 refused," in p.stderr
    assert "refused: aten::_fused_dropout x1 at " in p.stderr
