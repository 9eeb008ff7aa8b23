"""torch.cuda's submodule paths (issue 33 §5): torch.cuda.random.*, torch.cuda.streams.Stream,
torch.cuda.memory.change_current_allocator and torch.cuda.comm answer as the top-level names do, logged."""

from __future__ import annotations

import pytest
import torch

from runtime_testlib import enabled, sites


def test_random_submodule_seeds_the_generator_the_tensors_use() -> None:
    import torch.cuda.random as crandom

    with enabled("cpu") as s:
        torch.cuda.random.manual_seed(7)
        a = torch.randn(3, device="cuda")
        state = crandom.get_rng_state()
        b = torch.randn(3, device="cuda")
        crandom.set_rng_state(state)
        c = torch.randn(3, device="cuda")
        assert crandom.initial_seed() == 7
        apis = {site.api for site in sites(s)}
    torch.manual_seed(7)
    assert torch.equal(a, torch.randn(3)) and torch.equal(b, c)
    assert {"torch.cuda.manual_seed", "torch.cuda.get_rng_state", "torch.cuda.set_rng_state"} <= apis


def test_streams_submodule_classes_are_the_redirected_ones() -> None:
    import torch.cuda.streams as cstreams

    before = cstreams.Stream, cstreams.Event
    with enabled("cpu"):
        from torch.cuda.streams import Event, Stream  # as a script run under torchport imports them

        s = torch.cuda.streams.Stream(priority=-1)
        assert isinstance(s, torch.Stream) and isinstance(s, Stream) and isinstance(s, torch.cuda.Stream)
        assert isinstance(Event(), torch.Event)
        assert Stream is torch.cuda.Stream
    assert (cstreams.Stream, cstreams.Event) == before  # torch's own again


def test_change_current_allocator_is_refused_on_both_paths() -> None:
    with enabled("cpu") as s:
        for fn in (torch.cuda.change_current_allocator, torch.cuda.memory.change_current_allocator):
            with pytest.raises(
                NotImplementedError, match="change_current_allocator has no equivalent on target cpu"
            ):
                fn(None)
        line = [x for x in sites(s) if x.api == "torch.cuda.change_current_allocator"]
    assert line and line[0].cls == "mismatch"


def test_comm_matches_what_the_copies_would_be() -> None:
    import torch.cuda.comm as comm

    x = torch.arange(6.0)
    with enabled("cpu") as s:
        (b0,) = comm.broadcast(x, devices=[0])
        parts = comm.scatter(torch.arange(10), devices=[0, 1, 2])
        parts2 = comm.scatter(torch.arange(10).view(2, 5), devices=[0, 1], chunk_sizes=[2, 3], dim=1)
        g = comm.gather([torch.ones(2, 2), torch.zeros(1, 2)], dim=0, destination=0)
        r = comm.reduce_add([x, 2 * x, 3 * x], destination=0)
        out = [torch.empty(6), torch.empty(6)]
        bo = comm.broadcast(x, out=out)
        lines = {site.api: site for site in sites(s)}
    assert torch.equal(b0, x) and b0.data_ptr() != x.data_ptr()  # a copy, as on another GPU
    # torch.chunk's split, as torch._C._scatter makes it
    assert [p.tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [tuple(p.shape) for p in parts2] == [(2, 2), (2, 3)]
    assert torch.equal(g, torch.tensor([[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]))
    assert torch.equal(r, 6 * x)
    assert bo[0] is out[0] and torch.equal(out[1], x)
    assert lines["torch.cuda.comm.broadcast"].cls == "modified"
    assert {"torch.cuda.comm.scatter", "torch.cuda.comm.gather", "torch.cuda.comm.reduce_add"} <= set(lines)
    # torch's own functions once disabled
    assert comm.broadcast.__module__ == "torch.nn.parallel.comm"
