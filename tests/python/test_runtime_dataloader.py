"""DataLoader: pin_memory=True and pin_memory_device="cuda" work on the target and yield the same batches."""

from __future__ import annotations

import warnings

import torch
from torch.utils.data import DataLoader, TensorDataset

from runtime_testlib import enabled, sites


def _batches(**kw: object) -> list[torch.Tensor]:
    data = TensorDataset(torch.arange(20.0).reshape(10, 2))
    return [
        b[0]
        for b in DataLoader(
            data, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(1), **kw
        )
    ]


def test_pinned_loader_same_batches_no_warning() -> None:
    want = _batches()
    with enabled("cpu") as s:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # without the redirect torch warns that no accelerator can pin
            got = _batches(pin_memory=True)
            got2 = _batches(pin_memory=True, pin_memory_device="cuda")
            got3 = _batches(pin_memory=True, pin_memory_device="cuda:0", num_workers=1)
        site = next(x for x in sites(s) if x.api == "DataLoader")
    for g in (got, got2, got3):
        assert len(g) == len(want) and all(torch.equal(a, b) for a, b in zip(g, want))
    assert site.cls == "modified" and "pinned" in site.why


def test_plain_pin_memory_warns_here() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _batches(pin_memory=True)
    assert any("pin_memory" in str(w.message) for w in caught)
