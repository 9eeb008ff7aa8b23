"""Keyword-argument tensors are recorded as inputs (`model(input_ids=x)`, as Hugging Face models
are called)."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn

import torchport
from torchport.probe.cli import probe_main
from torchport.probe.compare import compare_dumps


class KwNet(nn.Module):
    """Takes its inputs by keyword and calls a submodule by keyword too."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(50, 16)
        self.fc = nn.Linear(16, 4)

    def forward(self, input_ids=None, attention_mask=None):
        h = self.embed(input_ids) * attention_mask.unsqueeze(-1)
        return self.fc(input=h)


def _ids(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 50, (2, 6), generator=g), torch.ones(2, 6)


def _run(out, ids, mask, positional=False):
    model = KwNet()
    with torchport.probe(model, out=out):
        y = model(ids, mask) if positional else model(input_ids=ids, attention_mask=mask)
        y.sum().backward()
    return out


def _records(dump):
    return [json.loads(line) for line in (dump / "records.jsonl").read_text().splitlines()]


def test_keyword_tensors_are_recorded_in_order(tmp_path):
    ids, mask = _ids()
    recs = _records(_run(tmp_path / "d", ids, mask))
    root_in = [r for r in recs if r["name"] == "" and r["dir"] == "forward" and r["io"] == "in"]
    # Slots follow forward()'s parameter order, as if the tensors had been passed by position.
    assert [(r["slot"], r["kwarg"], r["dtype"], r["shape"]) for r in root_in] == [
        (0, "input_ids", "int64", [2, 6]),
        (1, "attention_mask", "float32", [2, 6]),
    ]
    # Recorded before the call runs: the root's inputs come first, before the children's records.
    assert recs[0]["name"] == "" and recs[1]["name"] == ""
    fc_in = [r for r in recs if r["name"] == "fc" and r["dir"] == "forward" and r["io"] == "in"]
    assert [(r["slot"], r["kwarg"]) for r in fc_in] == [(0, "input")]
    # The keyword input of fc is differentiable: its gradient (fc's grad_input) is recorded too.
    assert any(r["name"] == "fc" and r["dir"] == "backward" and r["io"] == "out" for r in recs)


def test_changed_keyword_input_is_the_first_divergence(tmp_path):
    ids, mask = _ids()
    ref = _run(tmp_path / "ref", ids, mask)
    mask2 = mask.clone()
    mask2[1, 3:] = 0  # the run under test masks part of the second sequence
    got = _run(tmp_path / "got", ids, mask2)
    res = compare_dumps(got, ref)
    first = res.first_difference("forward")
    assert first is not None and (first.name, first.a["io"], first.a["kwarg"]) == ("", "in", "attention_mask")


def test_positional_and_keyword_calls_align(tmp_path):
    ids, mask = _ids()
    res = compare_dumps(_run(tmp_path / "kw", ids, mask), _run(tmp_path / "pos", ids, mask, positional=True))
    assert not res.only_a and not res.only_b
    assert len(res.rows) == res.a.count and all(r.identical for r in res.rows)
    assert {
        (r.a["slot"], r.a["kwarg"], r.b["slot"], "kwarg" in r.b)
        for r in res.rows
        if r.key[:2] == ("", "forward") and r.a["io"] == "in"
    } == {
        (0, "input_ids", 0, False),
        (1, "attention_mask", 1, False),
    }


def test_script_mode_records_keyword_inputs_of_the_first_call(tmp_path, capsys):
    """In script mode the model is found at its first call, before its keyword hook exists: that
    call's keyword tensors are recorded when it returns."""
    script = tmp_path / "s.py"
    script.write_text(
        "import torch, torch.nn as nn\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(3, 2)\n"
        "    def forward(self, x=None):\n"
        "        return self.fc(x)\n"
        "m = M()\n"
        "for _ in range(2):\n"
        "    m(x=torch.ones(4, 3))\n"
    )
    assert probe_main(["--out", str(tmp_path / "d"), "--", str(script)]) == 0
    capsys.readouterr()
    root_in = [r for r in _records(tmp_path / "d") if r["name"] == "" and r["io"] == "in"]
    assert [(r["call"], r["slot"], r["kwarg"], r["shape"]) for r in root_in] == [
        (0, 0, "x", [4, 3]),
        (1, 0, "x", [4, 3]),
    ]


@pytest.mark.filterwarnings("error")
def test_a_submodule_that_raises_keeps_the_call_stack(tmp_path):
    """When forward raises, torch calls the global forward hook without the keyword arguments it
    asked for; the hook must still pop the call so that the caller's records stay right (activation
    checkpointing stops its recomputation this way)."""

    class Raises(nn.Module):
        def forward(self, x):
            raise ValueError("not this way")

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bad = Raises()
            self.fc = nn.Linear(3, 2)

        def forward(self, x):
            try:
                return self.bad(x)
            except ValueError:
                return self.fc(x)

    model = Net()
    with torchport.probe(model, out=tmp_path / "d"):
        model(torch.ones(4, 3))
    got = [(r["name"], r["io"]) for r in _records(tmp_path / "d")]
    assert got == [("", "in"), ("bad", "in"), ("fc", "in"), ("fc", "out"), ("", "out")]
