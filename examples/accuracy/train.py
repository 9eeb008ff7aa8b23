"""A small seeded classifier that trains for a few steps on CPU, in fp32 or under autocast-bf16.

It is the example for `torchport probe` / `torchport compare` (see README.md next to it):

    torchport probe --out fp32.dump --full-tensors --steps 1 -- examples/accuracy/train.py
    torchport probe --out bf16.dump --full-tensors --steps 1 -- examples/accuracy/train.py --bf16
    torchport compare bf16.dump fp32.dump
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


class Classifier(nn.Module):
    def __init__(self, features: int = 32, width: int = 64, classes: int = 10, depth: int = 2) -> None:
        super().__init__()
        self.embed = nn.Linear(features, width)
        self.blocks = nn.Sequential(*[Block(width) for _ in range(depth)])
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.embed(x)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bf16", action="store_true", help="run forward under torch.autocast('cpu', bfloat16)")
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()

    torch.manual_seed(0)
    model = Classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(1)
    for step in range(args.steps):
        x = torch.randn(64, 32, generator=gen)
        y = torch.randint(0, 10, (64,), generator=gen)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            logits = model(x)
        loss = nn.functional.cross_entropy(logits.float(), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"step {step} loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
