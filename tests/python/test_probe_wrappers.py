"""Wrapper modules anywhere in the tree: a compiled, FSDP-wrapped, checkpoint-wrapped or
DataParallel-wrapped submodule aligns with the plain model (issue 6: "tolerating renamed wrappers")."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn

from probe_testlib import train
from torchport.probe.compare import compare_dumps
from torchport.probe.dump import normalize_name


class Wrapper(nn.Module):
    """A hand-built wrapper that keeps the wrapped module under `attr`, as DDP (`module`),
    torch.compile (`_orig_mod`), FSDP (`_fsdp_wrapped_module`) and checkpoint_wrapper
    (`_checkpoint_wrapped_module`) do."""

    def __init__(self, inner: nn.Module, attr: str) -> None:
        super().__init__()
        self.add_module(attr, inner)
        self.attr = attr

    def forward(self, x):
        return getattr(self, self.attr)(x)


class Net(nn.Module):
    """inp -> encoder (Linear, Tanh, Linear) -> head; `wrap` wraps the encoder only."""

    def __init__(self, wrap=None) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.inp = nn.Linear(16, 32)
        encoder = nn.Sequential(nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 32))
        self.encoder = wrap(encoder) if wrap else encoder
        self.head = nn.Linear(32, 8)

    def forward(self, x):
        return self.head(self.encoder(self.inp(x)))


def _names(dump):
    return {json.loads(line)["name"] for line in (dump / "records.jsonl").read_text().splitlines()}


def _assert_aligns_with_plain(dump, plain):
    res = compare_dumps(dump, plain)  # raises DumpError "different models" if signatures differ
    assert res.a.manifest["model"]["signature"] == res.b.manifest["model"]["signature"]
    assert not res.only_a and not res.only_b
    assert len(res.rows) == res.b.count
    assert all(r.identical for r in res.rows)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return train(tmp_path_factory.mktemp("plain") / "d", Net())


WRAPPER_ATTRS = ["module", "_orig_mod", "_fsdp_wrapped_module", "_checkpoint_wrapped_module"]


@pytest.mark.parametrize("attr", WRAPPER_ATTRS)
def test_wrapped_submodule_aligns(tmp_path, plain, attr):
    dump = train(tmp_path / "w", Net(lambda m: Wrapper(m, attr)))
    assert f"encoder.{attr}.0" in _names(dump)  # the dump keeps the real module paths
    _assert_aligns_with_plain(dump, plain)


@pytest.mark.filterwarnings("ignore:Using `torch.compile\\(module\\)` when there are global hooks")
def test_compiled_submodule_aligns(tmp_path, plain):
    dump = train(tmp_path / "c", Net(lambda m: torch.compile(m, backend="eager")))
    assert "encoder._orig_mod.2" in _names(dump)
    _assert_aligns_with_plain(dump, plain)


def test_checkpoint_wrapped_submodule_aligns(tmp_path, plain):
    """The real activation-checkpoint wrapper: besides the name, backward recomputes the encoder's
    forward; those calls repeat recorded ones and are not recorded again."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    dump = train(tmp_path / "k", Net(checkpoint_wrapper))
    assert "encoder._checkpoint_wrapped_module.1" in _names(dump)
    _assert_aligns_with_plain(dump, plain)


def test_a_real_submodule_named_module_is_kept(tmp_path):
    """`module` is also an ordinary attribute name: a child called `module` next to others is no
    wrapper, so it keeps its name (removing it would collide with the root's own records)."""

    class Odd(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.module = nn.Linear(16, 16)
            self.head = nn.Linear(16, 8)

        def forward(self, x):
            return self.head(self.module(x))

    a = train(tmp_path / "a", Odd())
    b = train(tmp_path / "b", Odd())
    res = compare_dumps(a, b)
    assert {r.name for r in res.rows} == {"", "module", "head"}
    assert {r.key[0] for r in res.rows} == {"", "module", "head"}
    assert len(res.rows) == res.a.count and all(r.identical for r in res.rows)


def test_normalize_name():
    assert normalize_name("encoder._orig_mod.layers.0") == "encoder.layers.0"
    assert normalize_name("_fsdp_wrapped_module.blocks.0._checkpoint_wrapped_module.attn") == "blocks.0.attn"
    assert normalize_name("module._orig_mod.fc") == "fc"
    # Without a wrapper list (older dumps), only leading `module` components are wrappers.
    assert normalize_name("encoder.module.fc") == "encoder.module.fc"
    # With one, `module` goes wherever a wrapper holds it, and nowhere else.
    assert normalize_name("encoder.module.fc", frozenset({"encoder"})) == "encoder.fc"
    assert normalize_name("module.fc", frozenset()) == "module.fc"
    assert normalize_name("module.fc", frozenset({""})) == "fc"
