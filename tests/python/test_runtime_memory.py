"""Memory queries as training scripts use them (issue 33 §2): `free, total = torch.cuda.mem_get_info()` for a
usage fraction, `torch.cuda.memory_stats()[...]` for peaks, torch.cuda.memory.* beside torch.cuda.*. On cpu
there is no device allocator: mem_get_info answers host memory (logged modified), memory_stats has every key
torch's CUDA allocator reports, each 0 (logged mismatch), and both paths of a name agree."""

from __future__ import annotations

import os
import pickle

import torch

from runtime_testlib import enabled, sites

# Keys that scripts and libraries read, from torch.cuda.memory_stats' documentation (torch/cuda/memory.py)
# and from the counts torch's binding fills (the allocation count is "allocation").
DOCUMENTED_KEYS = [
    "allocated_bytes.all.current",
    "allocated_bytes.all.peak",
    "allocated_bytes.large_pool.freed",
    "allocated_bytes.small_pool.allocated",
    "reserved_bytes.all.peak",
    "reserved_bytes.all.current",
    "active_bytes.all.peak",
    "inactive_split_bytes.all.current",
    "requested_bytes.all.peak",
    "allocation.all.current",
    "segment.all.peak",
    "active.all.current",
    "inactive_split.all.current",
    "oversize_allocations.peak",
    "oversize_segments.current",
    "num_alloc_retries",
    "num_ooms",
    "num_sync_all_streams",
    "num_device_alloc",
    "num_device_free",
]


def _site(session: object, api: str) -> object:
    found = [s for s in sites(session) if s.api == api]
    assert found, f"no log line for {api}"
    return found[0]


def test_mem_get_info_is_host_memory_and_agrees_with_total_memory() -> None:
    phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    with enabled("cpu") as s:
        free, total = torch.cuda.mem_get_info()
        used = 1 - free / total  # the usual line: no ZeroDivisionError
        props_total = torch.cuda.get_device_properties(0).total_memory
        site = _site(s, "torch.cuda.mem_get_info")
    assert 0 < total <= phys and 0 <= free <= total and 0.0 <= used < 1.0
    assert props_total == total
    assert site.cls == "modified" and "host memory" in site.why
    assert site.after == repr((free, total))  # the line gives the value the script got


def test_memory_stats_has_torch_s_keys_each_zero_logged_mismatch() -> None:
    with enabled("cpu") as s:
        _x = torch.empty(1 << 20, device="cuda")
        stats = torch.cuda.memory_stats()
        peak_mib = torch.cuda.memory_stats()["allocated_bytes.all.peak"] / 2**20
        nested = torch.cuda.memory_stats_as_nested_dict()
        summary = torch.cuda.memory_summary()
        site = _site(s, "torch.cuda.memory_stats")
    missing = [k for k in DOCUMENTED_KEYS if k not in stats]
    assert not missing
    assert all(type(v) is int and v == 0 for v in stats.values())
    assert list(stats) == sorted(stats)  # torch's memory_stats is sorted by key
    assert peak_mib == 0.0
    assert nested["allocated_bytes"]["all"]["peak"] == 0 and nested["num_ooms"] == 0
    assert isinstance(summary, str)
    # the values are not what a CUDA allocator would count for the 4 MiB tensor: logged, with the reason
    assert site.cls == "mismatch" and "each 0" in site.why


def test_memory_submodule_path_agrees_with_the_top_level_name() -> None:
    import torch.cuda.memory as cmem

    with enabled("cpu") as s:
        _x = torch.ones(1 << 20, device="cuda")
        a = torch.cuda.memory.memory_allocated()
        b = torch.cuda.memory_allocated()
        c = cmem.max_memory_reserved(0)
        d = torch.cuda.memory_stats()["allocated_bytes.all.current"]
        lines = [x for x in sites(s) if x.api == "torch.cuda.memory_allocated"]
    assert a == b == c == d == 0
    assert len(lines) == 2  # both paths are logged, each at its own line
    assert cmem.memory_allocated.__module__ == "torch.cuda.memory"  # torch's own again after disable()


def test_memory_history_recipe_records_nothing_and_says_so(tmp_path: object) -> None:
    # PyTorch's "Understanding CUDA Memory Usage" recipe
    path = os.path.join(str(tmp_path), "snapshot.pickle")
    with enabled("cpu") as s:
        torch.cuda.memory._record_memory_history(max_entries=100000)
        _y = torch.randn(64, 64, device="cuda") @ torch.randn(64, 64, device="cuda")
        torch.cuda.memory._dump_snapshot(path)
        torch.cuda.memory._record_memory_history(enabled=None)
        snap = torch.cuda.memory._snapshot()
        rec = _site(s, "torch.cuda.memory._record_memory_history")
        dump = _site(s, "torch.cuda.memory._dump_snapshot")
    with open(path, "rb") as f:
        saved = pickle.load(f)
    assert saved["segments"] == [] and saved["device_traces"] == [[]]
    assert snap["segments"] == []
    assert rec.cls == dump.cls == "mismatch" and "no allocation history" in rec.why
