"""`torchport run --shapes`: dynamic-shape analysis on CPU, without hand edits.

The main test runs a variable-length LSTM classifier (fixtures/shapes/varlen_train.py) whose batches are
padded to 7, 12, 7, 20 and 12 tokens. Which call sites see the sequence length is known from the model: those,
and only those, must be marked varying, first at step 1 (12 is new) and last at step 3 (20 is new); steps 2
and 4 repeat lengths already seen. Everything else (the head, the loss, the labels, the optimizer, model init)
is fixed.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from runtime_testlib import run_torchport

REPO = Path(__file__).resolve().parents[2]
VARLEN = Path(__file__).resolve().parent / "fixtures" / "shapes" / "varlen_train.py"
PROJECT = REPO / "examples" / "cuda_project"
ASCEND_COLUMNS = [
    "Function Name",
    "File Path",
    "Line Number",
    "Call Stack",
    "Input Shape Range",
    "Output Shape Range",
]


def line_no(path: Path, text: str) -> int:
    hits = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    return header, [dict(zip(header, r)) for r in rows[1:]]


@pytest.fixture(scope="module")
def varlen(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, str]]:
    out = tmp_path_factory.mktemp("shapes") / "varlen.csv"
    p = run_torchport(["run", "--target", "cpu", "--quiet", f"--shapes={out}", str(VARLEN)])
    assert p.returncode == 0, p.stderr
    assert "epoch 0 step 4" in p.stdout  # the script ran all five batches
    header, rows = read(out)
    assert header[:6] == ASCEND_COLUMNS
    return rows


def test_exactly_the_sequence_sites_vary(varlen: list[dict[str, str]]) -> None:
    L = lambda text: line_no(VARLEN, text)  # noqa: E731
    # (function, line) of every call whose tensors carry the padded sequence length
    expected = {
        ("torch._C._nn.pad_sequence", L("padded = nn.utils.rnn.pad_sequence")),
        ("torch.Tensor.ne", L("mask = (tokens != PAD)")),
        ("torch.Tensor.unsqueeze", L("mask = (tokens != PAD)")),
        ("torch.Tensor.float", L("mask = (tokens != PAD)")),
        ("torch.nn.functional.embedding", L("x = self.embed(tokens)")),
        ("torch.lstm", L("out, _ = self.lstm(x)")),
        ("torch.Tensor.mul", L("pooled = (out * mask)")),
        ("torch.Tensor.sum", L("pooled = (out * mask)")),
        ("torch.Tensor.to", L("tokens = tokens.cuda(non_blocking=True)")),
    }
    varying = {(r["Function Name"], int(r["Line Number"])) for r in varlen if r["Varying"] == "yes"}
    assert varying == expected
    # the fixed sites next to them are recorded and not varying: the LSTM's zero state, the pooling's
    # division, the head, the loss, the labels and Adam's update (many parameter shapes, the same ones in
    # every step)
    fixed = {
        ("torch.zeros", L("out, _ = self.lstm(x)")),
        ("torch.Tensor.div", L("pooled = (out * mask)")),
        ("torch.nn.functional.linear", L("return self.head(pooled)")),
        ("torch.nn.functional.cross_entropy", L("loss = F.cross_entropy")),
        ("torch.Tensor.to", L("labels = labels.cuda(non_blocking=True)")),
        ("torch.Tensor.addcdiv_", L("optimizer.step()")),
    }
    seen = {(r["Function Name"], int(r["Line Number"])): r for r in varlen}
    for key in fixed:
        assert seen[key]["Varying"] == "no", key
    assert all(r["File Path"] == str(VARLEN) for r in varlen)


def test_varied_steps_and_ranges(varlen: list[dict[str, str]]) -> None:
    rows = {(r["Function Name"], int(r["Line Number"])): r for r in varlen}
    lstm = rows[("torch.lstm", line_no(VARLEN, "out, _ = self.lstm(x)"))]
    # lengths 7, 12, 7, 20, 12: new at steps 1 and 3, three distinct signatures
    assert (lstm["First Varied Step"], lstm["Last Varied Step"], lstm["Distinct Shapes"]) == ("1", "3", "3")
    assert lstm["Calls"] == "5" and lstm["Step Unit"] == "optimizer step"
    assert lstm["Input Shape Range"].startswith("[(4, 7~20, 16), (1, 4, 32), (1, 4, 32), (128, 16)")
    assert lstm["Output Shape Range"] == "[(4, 7~20, 32), (1, 4, 32), (1, 4, 32)]"
    assert "in forward <- " in lstm["Call Stack"] and " in main <- " in lstm["Call Stack"]
    # the sentences of every batch are new lengths, so pad_sequence's inputs change at step 4 as well
    pad = rows[("torch._C._nn.pad_sequence", line_no(VARLEN, "padded = nn.utils.rnn.pad_sequence"))]
    assert (pad["First Varied Step"], pad["Last Varied Step"]) == ("1", "4")
    head = rows[("torch.nn.functional.linear", line_no(VARLEN, "return self.head(pooled)"))]
    assert head["Input Shape Range"] == "[(4, 32), (3, 32), (3,)]" and head["First Varied Step"] == ""


def test_forward_steps_without_optimizer() -> None:
    """An inference loop counts forward calls of the top module; nested modules are not steps."""
    import torch

    from torchport.runtime._shapes import ShapeRecorder

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    rec = ShapeRecorder()
    with rec, torch.no_grad():
        for n in (3, 3, 5, 3, 6):
            batch = torch.randn(n, 8)
            model(batch)
    rows = {r[0]: r for r in rec.rows() if r[0] in ("torch.randn", "torch.nn.functional.linear")}
    assert rec.step_unit() == "forward" and rec.forwards == 5
    for name in ("torch.randn", "torch.nn.functional.linear"):
        assert rows[name][6:9] == ["yes", "2", "4"], rows[name]
    # both layers run from the same user line (`model(batch)`): one site, their shapes merged
    assert rows["torch.nn.functional.linear"][4] == "[(3~6, 8), (2~8, 8), (2~8,)]"


def test_cuda_project_example(tmp_path: Path) -> None:
    """examples/cuda_project as a user runs it: fixed-size batches, so no site varies; the report gets
    Ascend's default name in the working directory."""
    work = tmp_path / "cuda_project"
    shutil.copytree(PROJECT, work)
    p = run_torchport(
        ["run", "--target", "cpu", "--cuda-available", "user", "--quiet", "--shapes", "train.py"]
        + ["--steps", "3", "--out", str(tmp_path / "ckpt.pt")],
        cwd=work,
    )
    assert p.returncode == 0, p.stderr
    assert "3 optimizer step(s); 0 with varying shapes" in p.stderr
    header, rows = read(work / "msft_dynamic_shape_analysis_report.csv")
    assert header[:6] == ASCEND_COLUMNS
    net = work / "model" / "net.py"
    conv = line_no(net, "x = F.max_pool2d(F.relu(self.conv1(x)), 2)")
    at = {r["Function Name"] for r in rows if r["File Path"] == str(net) and int(r["Line Number"]) == conv}
    assert {"torch.nn.functional.conv2d", "torch.nn.functional.relu", "torch.nn.functional.max_pool2d"} <= at
    assert [r for r in rows if r["Varying"] == "yes"] == []
