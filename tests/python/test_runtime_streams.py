"""Streams and events as training scripts use them (issue 33 §1): the data-prefetcher idiom, torch.Stream /
torch.Event with a CUDA device, Tensor.record_stream. Judged against plain CPU torch: the same values, and
torchport's host streams are real torch.Stream objects that torch's own bindings take."""

from __future__ import annotations

import re
import time

import torch

from runtime_testlib import enabled, sites


class DataPrefetcher:
    """The prefetcher of NVIDIA's apex ImageNet example (and many trainers copied from it): the next batch
    is copied on a side stream while the current one is used."""

    def __init__(self, loader: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        self.loader = iter(loader)
        self.stream = torch.cuda.Stream()
        self.preload()

    def preload(self) -> None:
        try:
            self.next_input, self.next_target = next(self.loader)
        except StopIteration:
            self.next_input = self.next_target = None
            return
        with torch.cuda.stream(self.stream):
            self.next_input = self.next_input.cuda(non_blocking=True).float().div_(255)
            self.next_target = self.next_target.cuda(non_blocking=True)

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        torch.cuda.current_stream().wait_stream(self.stream)
        inp, target = self.next_input, self.next_target
        if inp is not None:
            inp.record_stream(torch.cuda.current_stream())
            target.record_stream(torch.cuda.current_stream())
        self.preload()
        return inp, target


def _batches() -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    return [
        (torch.randint(0, 256, (4, 3), generator=g, dtype=torch.uint8), torch.tensor([i, i + 1]))
        for i in range(3)
    ]


def test_data_prefetcher_runs_and_gives_the_plain_cpu_batches() -> None:
    want = [(x.float().div_(255), y) for x, y in _batches()]
    with enabled("cpu") as s:
        pf = DataPrefetcher(_batches())
        got = []
        inp, target = pf.next()
        while inp is not None:
            got.append((inp, target))
            inp, target = pf.next()
        lines = {x.api: x for x in sites(s)}
    assert len(got) == 3
    for (a, b), (c, d) in zip(got, want):
        assert a.device.type == "cpu" and torch.equal(a, c) and torch.equal(b, d)
    rec = lines["Tensor.record_stream"]
    assert rec.cls == "modified" and rec.after == "nothing" and "runs in order" in rec.why
    assert lines["torch.cuda.Stream"].cls == "modified"


def test_host_streams_are_torch_streams_and_events_are_torch_events() -> None:
    with enabled("cpu"):
        side, cur = torch.cuda.Stream(), torch.cuda.current_stream()
        assert isinstance(side, torch.Stream) and isinstance(cur, torch.Stream)
        assert isinstance(side, torch.cuda.Stream) and isinstance(cur, torch.cuda.Stream)
        assert side.device == torch.device("cpu")
        ev = torch.cuda.Event()
        assert isinstance(ev, torch.Event) and isinstance(ev, torch.cuda.Event)
        assert isinstance(side.record_event(), torch.Event)
        side.wait_event(ev)
        side.wait_stream(cur)
        assert side.query() and ev.query()


def test_torch_stream_and_event_with_a_cuda_device() -> None:
    with enabled("cpu") as s:
        stream = torch.Stream(device="cuda")
        start = torch.Event(device="cuda", enable_timing=True)
        end = torch.Event(device="cuda:0", enable_timing=True)
        start.record(stream)
        time.sleep(0.02)
        end.record(stream)
        end.synchronize()
        ms = start.elapsed_time(end)
        stream.wait_stream(torch.cuda.current_stream())
        assert isinstance(stream, torch.Stream) and isinstance(start, torch.Event)
        assert stream.device.type == "cpu"
        assert 15.0 <= ms < 2000.0
        # not a CUDA device: torch's own classes, untouched and not logged
        plain = torch.Stream(device="cpu")
        assert type(plain).__module__ == "torch" and type(plain).__name__ == "Stream"
        lines = {x.api: x for x in sites(s)}
    assert lines["torch.Stream"].before == "torch.Stream(device='cuda')"
    assert lines["torch.Stream"].after == "torchport._HostStream()"
    assert lines["torch.Event"].cls == "modified"
    # disable() puts torch's classes back
    assert torch.Stream.__module__ == "torch" and not hasattr(torch.Stream, "_tp_proxy")
    try:
        torch.Stream(device="cuda")
        raise AssertionError("torch.Stream(device='cuda') works after disable() on a cpu build")
    except RuntimeError as e:  # torch's own error: a CPU build names CUDA, a CUDA build without a GPU not
        assert re.search(r"cuda|Backend doesn't support create a new Stream", str(e), re.IGNORECASE), e


def test_record_stream_is_torch_s_own_outside_host_streams() -> None:
    x = torch.ones(2)
    with enabled("cpu"):
        x.record_stream(torch.cuda.current_stream())  # a host stream: accepted
        try:
            x.record_stream(torch.Stream(device="cpu"))  # torch's cpu stream: what plain CPU torch says
            raise AssertionError("record_stream on a plain cpu stream did not raise")
        except NotImplementedError as e:
            assert "record_stream" in str(e)
