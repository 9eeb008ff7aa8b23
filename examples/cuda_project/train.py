"""Train SmallNet on random data for a few steps (CUDA version): python train.py --steps 3 [--out PATH]

See https://pytorch.org/docs/stable/notes/cuda.html for the cuda semantics.
"""

import argparse
import os
import tempfile

import torch
import torch.distributed as dist
from torch.cuda.amp import GradScaler, autocast

from model import make_model


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="train SmallNet on random data")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--out", help="keep the checkpoint here (default: a temporary file, removed)")
    return parser.parse_args()


def setup_distributed() -> int:
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        dist.init_process_group(backend="nccl")
        rank = dist.get_rank()
        torch.cuda.set_device(rank)
        return rank
    return 0


def main() -> None:
    args = parse_args()
    rank = setup_distributed()
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    torch.backends.cudnn.benchmark = True

    device = torch.device(f"cuda:{rank}") if args.device == "cuda" else torch.device("cpu")
    model = make_model()
    print(f"training on {next(model.parameters()).device}")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = GradScaler()

    for step in range(args.steps):
        images = torch.randn(8, 1, 28, 28, device=device)
        labels = torch.randint(0, 10, (8,)).cuda(non_blocking=True)
        optimizer.zero_grad()
        with autocast():
            loss = torch.nn.functional.cross_entropy(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        torch.cuda.synchronize()
        print(f"step {step} loss {loss.item():.4f}")

    if torch.cuda.is_available():
        peak = torch.cuda.max_memory_allocated() / 2**20
        print(f"peak memory {peak:.1f} MiB")

    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or os.path.join(tmp, "ckpt.pt")
        torch.save(model.state_dict(), out)
        state = torch.load(out, map_location="cuda:0")
    model.load_state_dict(state)
    print("checkpoint reloaded" + (f" from {args.out}" if args.out else " (a temporary file: --out PATH keeps it)"))


if __name__ == "__main__":
    main()
