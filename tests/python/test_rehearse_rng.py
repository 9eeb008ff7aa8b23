"""The rehearsal device's generators have the vendors' Philox state (16 bytes: seed, then offset), as
torch_npu's and CUDA's have, and DTensor's RNG tracker (torch/distributed/tensor/_random.py) works on it; the
numbers are still the host CPU generator's, so a rehearsed run draws what the --target cpu run draws
(docs/rehearse.md, "Random numbers")."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from rehearse_testlib import rehearsal_built, rehearse  # noqa: F401
from test_rehearse_ddp import torchrun

STATE = """
import json
import torch

out = {}
def seed_offset(s):
    return [int(s[:8].view(torch.uint64).item()), int(s[8:].view(torch.int64).item())]

torch.manual_seed(1234)
s = torch.npu.get_rng_state()
out["layout"] = [s.numel(), str(s.dtype), str(s.device)]
out["after_seed"] = seed_offset(s)
x = torch.randn(10, device="npu")
out["after_10"] = seed_offset(torch.npu.get_rng_state())
torch.rand(4, device="npu")
out["after_14"] = seed_offset(torch.npu.get_rng_state())
torch.manual_seed(1234)
out["cpu_numbers"] = torch.equal(x.cpu(), torch.randn(10))

# a saved state replays its numbers
s = torch.npu.get_rng_state()
a = torch.randn(6, device="npu")
torch.npu.set_rng_state(s)
b = torch.randn(6, device="npu")
out["replay"] = torch.equal(a, b)
out["offset_after_replay"] = seed_offset(torch.npu.get_rng_state())[1]

# the seed alone (8 bytes): offset 0, the start of that seed's stream, as torch.manual_seed gives on the CPU
torch.npu.set_rng_state(torch.tensor([99], dtype=torch.int64).view(torch.uint8))
c = torch.randn(5, device="npu")
torch.manual_seed(99)
out["seed_only"] = torch.equal(c.cpu(), torch.randn(5))

# CPU draws move the shared host stream: the next read names that position (offset + 4), and it replays
torch.manual_seed(5)
before = seed_offset(torch.npu.get_rng_state())
torch.randn(3)
s = torch.npu.get_rng_state()
out["host_moved"] = [before, seed_offset(s)]
d = torch.randn(7, device="npu")
torch.npu.set_rng_state(s)
out["host_moved_replay"] = torch.equal(d, torch.randn(7, device="npu"))

# a generator of its own: set_offset goes back to the offsets it reached; an offset it never reached starts a
# stream of (seed, offset), the same in a second generator, another one at another offset
g = torch.Generator(device="npu")
g.manual_seed(7)
first = torch.randn(8, device="npu", generator=g)
second = torch.randn(8, device="npu", generator=g)
out["gen_seed_offset"] = [g.initial_seed(), g.get_offset()]
g.set_offset(8)
out["gen_offset_8"] = torch.equal(torch.randn(8, device="npu", generator=g), second)
g.set_offset(0)
out["gen_offset_0"] = torch.equal(torch.randn(8, device="npu", generator=g), first)
g.set_offset(1000)
far = torch.randn(8, device="npu", generator=g)
g2 = torch.Generator(device="npu")
g2.manual_seed(7)
g2.set_offset(1000)
out["far_same_in_another_generator"] = torch.equal(torch.randn(8, device="npu", generator=g2), far)
out["far_differs"] = [not torch.equal(far, first), not torch.equal(far, second)]
g.set_offset(1004)
out["far_other_offset_differs"] = not torch.equal(torch.randn(8, device="npu", generator=g), far)

errors = []
for bad in (torch.zeros(12, dtype=torch.uint8), torch.tensor([1, 6], dtype=torch.int64).view(torch.uint8)):
    try:
        torch.npu.set_rng_state(bad)
    except RuntimeError as e:
        errors.append(str(e).splitlines()[0])
out["errors"] = errors
print("RESULT " + json.dumps(out))
"""


def result(stdout: str) -> Any:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def test_the_device_state_is_seed_and_offset_and_offsets_are_honoured(
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    (tmp_path / "state.py").write_text(STATE)
    p = rehearse("--target", "npu", "state.py", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    r = result(p.stdout)
    assert r["layout"] == [16, "torch.uint8", "cpu"]
    assert r["after_seed"] == [1234, 0]
    # a draw moves the offset by its element count rounded up to a multiple of 4 (DTensor's unit)
    assert r["after_10"] == [1234, 12]
    assert r["after_14"] == [1234, 16]
    assert r["cpu_numbers"] is True
    assert r["replay"] is True
    # the CPU's randn(10) after torch.manual_seed moved the shared stream (offset 4), randn(6) then 8 more
    assert r["offset_after_replay"] == 12
    assert r["seed_only"] is True
    assert r["host_moved"] == [[5, 0], [5, 4]]
    assert r["host_moved_replay"] is True
    assert r["gen_seed_offset"] == [7, 16]
    assert r["gen_offset_8"] is True
    assert r["gen_offset_0"] is True
    assert r["far_same_in_another_generator"] is True
    assert r["far_differs"] == [True, True]
    assert r["far_other_offset_differs"] is True
    # the vendors' (and CUDA's) messages
    assert r["errors"] == ["RNG state is wrong size", "offset must be a multiple of 4"]


DTENSOR = """
import json
import os

import torch
import torch.distributed as dist
import torch.distributed.tensor._random as dtensor_random
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
dist.init_process_group("hccl", rank=0, world_size=1)
mesh = init_device_mesh("npu", (1,))


def init(make):
    # as torchtitan's init_weights: nn.init on each weight in turn, after one seed
    torch.manual_seed(0)
    w = make(torch.empty(8, 16), [Shard(0)])
    torch.nn.init.trunc_normal_(w, std=0.02)
    b = make(torch.empty(5, 3), [Replicate()])
    torch.nn.init.uniform_(b, -0.5, 0.5)
    v = make(torch.empty(7), [Shard(0)])
    torch.nn.init.normal_(v)
    return [t.full_tensor().cpu() if isinstance(t, DTensor) else t.cpu() for t in (w, b, v)]


cpu = init(lambda t, placements: t)
dev = init(lambda t, placements: distribute_tensor(t.to("npu"), mesh, placements))
state = torch.npu.get_rng_state()
out = {
    "tracker": type(dtensor_random._rng_tracker).__name__,
    "equal": [torch.equal(a, b) for a, b in zip(cpu, dev)],
    "nonzero": [bool(t.abs().sum() > 0) for t in dev],
    "std_w": float(dev[0].std()),
    "seed_offset": [int(state[:8].view(torch.uint64).item()), int(state[8:].view(torch.int64).item())],
}
print("RESULT " + json.dumps(out))
dist.destroy_process_group()
"""


def test_dtensor_random_init_on_a_one_rank_mesh_draws_the_cpu_numbers(
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    """DTensor's tracker reads the 16-byte state, moves its offset around each random op and restores it; on
    one rank the weights it initialises are the --target cpu run's, bit for bit."""
    (tmp_path / "dtensor.py").write_text(DTENSOR)
    p = rehearse("--target", "npu", "dtensor.py", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    r = result(p.stdout)
    assert r["tracker"] == "OffsetBasedRNGTracker"
    assert r["equal"] == [True, True, True]
    assert r["nonzero"] == [True, True, True]
    assert 0.01 < r["std_w"] < 0.03  # trunc_normal_(std=0.02) really ran
    # DTensor leaves the offset at old + numel rounded up to 4 per op: 128 + 16 + 8
    assert r["seed_offset"] == [0, 152]


DTENSOR_2 = textwrap.dedent(
    """
    import json
    import os

    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    torch.npu.set_device(int(os.environ["LOCAL_RANK"]))
    mesh = init_device_mesh("npu", (2,))
    torch.manual_seed(0)
    w = distribute_tensor(torch.empty(8, 4, device="npu"), mesh, [Shard(0)])
    torch.nn.init.uniform_(w)
    r = distribute_tensor(torch.empty(6, device="npu"), mesh, [Replicate()])
    torch.nn.init.uniform_(r)
    torch.manual_seed(0)
    cpu_first = torch.rand(16)
    out = {
        "shard": w.to_local().cpu().flatten().tolist(),
        "replicate": r.to_local().cpu().tolist(),
        "cpu_first": cpu_first.tolist(),
    }
    with open(f"rank{dist.get_rank()}.json", "w") as f:
        json.dump(out, f)
    dist.destroy_process_group()
    """
)


def test_dtensor_on_two_ranks_draws_distinct_shards_and_equal_replicas(
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    """On 2 ranks the offsets DTensor sets are honoured: rank 1's shard starts at an offset no draw reached,
    so it has numbers of its own (not rank 0's, which a --target cpu run of 2 ranks would repeat), and a
    replicated tensor drawn after that is the same on both ranks. Rank 0's shard is still the CPU stream's
    start."""
    (tmp_path / "dt2.py").write_text(DTENSOR_2)
    args = ("--no-python", "torchport", "rehearse", "--target", "npu", "--devices", "2", "dt2.py")
    p = torchrun(*args, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    r0, r1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["shard"] == r0["cpu_first"]
    assert r1["shard"] != r0["shard"]
    assert all(0.0 <= x < 1.0 for x in r1["shard"]) and len(set(r1["shard"])) == 16
    assert r0["replicate"] == r1["replicate"]
    assert r0["replicate"] != r0["cpu_first"][:6]
