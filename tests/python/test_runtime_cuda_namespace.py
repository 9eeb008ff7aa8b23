"""The torch.cuda namespace on target cpu: device management, is_available modes, streams and events, memory,
RNG, graphs, nvtx and typed tensors, each with the class the log gives it."""

from __future__ import annotations

import time

import pytest
import torch

from runtime_testlib import enabled, sites


def _site(session: object, api: str) -> object:
    found = [s for s in sites(session) if s.api == api]
    assert found, f"no log line for {api}"
    return found[0]


def test_is_available_tells_the_truth_by_default() -> None:
    with enabled("cpu") as s:
        assert torch.cuda.is_available() is False
        assert _site(s, "torch.cuda.is_available").cls == "match"


def test_is_available_target_mode_answers_for_the_target() -> None:
    with enabled("cpu", cuda_available="target") as s:
        assert torch.cuda.is_available() is True
        assert _site(s, "torch.cuda.is_available").cls == "modified"


def test_is_available_user_mode_truth_for_libraries_target_for_user_code() -> None:
    import torch.utils.data  # noqa: F401 - a module inside site-packages

    lib_caller = compile("torch.cuda.is_available()", torch.__file__, "eval")  # a frame "inside" torch
    with enabled("cpu", cuda_available="user"):
        assert torch.cuda.is_available() is True  # this test file is user code
        assert eval(lib_caller, {"torch": torch}) is False


def test_bad_cuda_available_mode_is_rejected() -> None:
    import torchport.runtime as rt

    with pytest.raises(ValueError, match="cuda_available"):
        rt.enable("cpu", cuda_available="yes")
    assert not rt.is_enabled()


def test_device_count_agrees_with_is_available_in_every_mode() -> None:
    # `for i in range(torch.cuda.device_count())` must not see a device that is_available() denies: the truth
    # (the default) is 0 devices here; the target mode counts the target's devices (cpu: one).
    with enabled("cpu") as s:
        assert torch.cuda.is_available() is False and torch.cuda.device_count() == 0
        assert _site(s, "torch.cuda.device_count").cls == "match"
    with enabled("cpu", cuda_available="target") as s:
        assert torch.cuda.is_available() is True and torch.cuda.device_count() == 1
        assert _site(s, "torch.cuda.device_count").cls == "modified"
    lib_caller = compile("torch.cuda.device_count()", torch.__file__, "eval")  # a frame "inside" torch
    with enabled("cpu", cuda_available="user"):
        assert torch.cuda.device_count() == 1  # user code
        assert eval(lib_caller, {"torch": torch}) == 0  # an installed library: the truth


def test_device_management() -> None:
    with enabled("cpu") as s:
        assert torch.cuda.current_device() == 0
        torch.cuda.set_device(0)
        torch.cuda.set_device("cuda:0")
        with torch.cuda.device(0):
            pass
        props = torch.cuda.get_device_properties(0)
        assert props.total_memory > 0 and (props.major, props.minor) == (0, 0)
        assert torch.cuda.get_device_capability() == (0, 0)
        assert isinstance(torch.cuda.get_device_name(0), str)
        torch.cuda.synchronize()
        assert _site(s, "torch.cuda.get_device_capability").cls == "mismatch"
        # the user's line, not the wrapper that gives torch's internals the truth (issue 33)
        assert _site(s, "torch.cuda.get_device_capability").filename == __file__
        assert _site(s, "torch.cuda.get_device_name").filename == __file__
        assert _site(s, "torch.cuda.synchronize").cls == "match"


def test_memory_statistics_are_zero_and_called_mismatch() -> None:
    with enabled("cpu") as s:
        _big = torch.empty(1 << 20, device="cuda")
        assert torch.cuda.memory_allocated() == 0
        assert torch.cuda.max_memory_reserved(0) == 0
        assert torch.cuda.memory_stats()["allocated_bytes.all.current"] == 0
        # host memory, not (0, 0): `1 - free / total` must not divide by zero (issue 33; the values are
        # checked in test_runtime_memory.py)
        free, total = torch.cuda.mem_get_info()
        assert 0 <= free <= total and total > 0
        assert _site(s, "torch.cuda.mem_get_info").cls == "modified"
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.empty_cache()
        site = _site(s, "torch.cuda.memory_allocated")
        assert site.cls == "mismatch" and "allocator" in site.why


def test_streams_and_events_time_host_work() -> None:
    with enabled("cpu") as s:
        stream = torch.cuda.Stream()
        assert isinstance(stream, torch.cuda.Stream)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        with torch.cuda.stream(stream):
            time.sleep(0.02)
        end.record()
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        ms = start.elapsed_time(end)
        assert 15.0 <= ms < 2000.0
        assert end.query() and stream.query()
        assert _site(s, "torch.cuda.Event").cls == "modified"


def test_rng_seeds_the_generator_the_tensors_use() -> None:
    with enabled("cpu"):
        torch.cuda.manual_seed(11)
        a = torch.randn(4, device="cuda")
        state = torch.cuda.get_rng_state()
        b = torch.randn(4, device="cuda")
        torch.cuda.set_rng_state(state)
        c = torch.randn(4, device="cuda")
        assert torch.cuda.initial_seed() == 11
    torch.manual_seed(11)
    assert torch.equal(a, torch.randn(4))
    assert torch.equal(b, c)


def test_graphs_eager_callables_and_replay_refuses() -> None:
    with enabled("cpu") as s:
        lin = torch.nn.Linear(2, 2)
        graphed = torch.cuda.make_graphed_callables(lin, (torch.randn(1, 2),))
        assert graphed is lin
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = lin(torch.ones(1, 2))
        assert out.shape == (1, 2)
        with pytest.raises(RuntimeError, match="cannot replay"):
            g.replay()
        assert torch.cuda.is_current_stream_capturing() is False
        assert _site(s, "torch.cuda.CUDAGraph").cls == "mismatch"


def test_nvtx_ranges_become_profiler_ranges() -> None:
    with enabled("cpu"):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            torch.cuda.nvtx.range_push("my_step")
            torch.ones(3) * 2
            torch.cuda.nvtx.range_pop()
            with torch.cuda.nvtx.range("my_block"):
                torch.ones(3) + 1
    names = {e.name for e in prof.events()}
    assert {"my_step", "my_block"} <= names
    with enabled("cpu") as s:
        torch.cuda.nvtx.range_push("step 3")
        torch.cuda.nvtx.range_pop()
        lines = {x.api: x for x in sites(s)}
    push, pop = lines["torch.cuda.nvtx.range_push"], lines["torch.cuda.nvtx.range_pop"]
    assert (push.before, push.after) == (
        "torch.cuda.nvtx.range_push('step 3')",
        "torch.autograd.profiler.record_function('step 3')",
    )
    assert (pop.before, pop.after) == ("torch.cuda.nvtx.range_pop()", "0")  # the depth it returned


def test_typed_tensors() -> None:
    with enabled("cpu"):
        t = torch.cuda.FloatTensor([1.0, 2.0])
        assert t.dtype == torch.float32 and t.device.type == "cpu"
        assert torch.cuda.LongTensor([3]).dtype == torch.int64
        assert torch.cuda.DoubleTensor([1.0]).dtype == torch.float64  # never downgraded
        assert torch.cuda.default_generators[0] is torch.default_generator


def test_untracked_fast_path_answers_as_the_logged_one() -> None:
    # without a log (import torchport.auto), a torch.cuda call without arguments takes a shorter path
    got = {}
    for track in (False, True):
        with enabled("cpu", track_sites=track):
            got[track] = (
                isinstance(torch.cuda.current_stream(), torch.Stream),
                torch.cuda.current_stream() == torch.cuda.default_stream(0),
                torch.cuda.synchronize(),
                torch.cuda.memory_allocated(),
                torch.cuda.memory_allocated(0),
                torch.cuda.current_device(),
                torch.cuda.get_device_capability(),
            )
            captured = torch.cuda.current_stream
    assert got[False] == got[True] == (True, True, None, 0, 0, 0, (0, 0))
    with pytest.raises((RuntimeError, AssertionError)):  # captured while enabled: torch's own after disable()
        captured()
