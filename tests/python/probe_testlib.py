"""Small seeded models and runs shared by the test_probe_* files."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

import torch
import torch.nn as nn

import torchport


def mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(16, 32),  # 0
        nn.Tanh(),  # 1
        nn.Linear(32, 32),  # 2
        nn.Linear(32, 32),  # 3
        nn.Linear(32, 8),  # 4
    )


def train(
    out: Path,
    model: nn.Module,
    *,
    steps: int = 2,
    full_tensors: bool = False,
    level: str = "module",
    loss_fn: Optional[Callable[[torch.Tensor], torch.Tensor]] = None,
    probe_model: Optional[nn.Module] = None,
    param_grads: bool = False,
) -> Path:
    """A few seeded SGD steps of `model` with probing on; the data does not depend on the model."""
    gen = torch.Generator().manual_seed(1)
    data = [torch.randn(8, 16, generator=gen) for _ in range(steps)]
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    probe = torchport.probe(
        probe_model or model, out=out, level=level, full_tensors=full_tensors, param_grads=param_grads
    )
    with probe:
        for x in data:
            y = model(x)
            loss = loss_fn(y) if loss_fn else y.sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
    return out
