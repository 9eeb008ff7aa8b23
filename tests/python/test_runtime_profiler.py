"""Profiler: ProfilerActivity.CUDA becomes the target's activity (none on cpu: dropped, CPU kept), use_cuda
and CUDA sort keys are mapped, and the profile still records the work."""

from __future__ import annotations

import torch
from torch.profiler import ProfilerActivity, profile

from runtime_testlib import enabled, sites


def test_cuda_activity_on_cpu_profiles_cpu() -> None:
    with enabled("cpu") as s:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            torch.mm(torch.ones(8, 8, device="cuda"), torch.ones(8, 8, device="cuda"))
        table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=5)
        site = next(x for x in sites(s) if x.api == "torch.profiler.profile")
    assert "aten::mm" in table
    assert site.cls == "modified" and "no device activity" in site.why


def test_legacy_use_cuda() -> None:
    # torch 2.14 removed use_cuda from both profilers (a TypeError there even on CUDA): the script's intent,
    # profile the device too, is kept on every torch
    with enabled("cpu") as s:
        with torch.autograd.profiler.profile(use_cuda=True) as prof:
            torch.ones(4, device="cuda").sum()
        with profile(use_cuda=True) as prof2:
            torch.ones(4, device="cuda").sum()
        with torch.autograd.profiler.profile(use_cuda=False) as prof3:
            torch.ones(4, device="cuda").sum()
        logged = {x.api for x in sites(s)}
    for events in (prof.function_events, prof2.events(), prof3.function_events):
        assert any(e.name == "aten::sum" for e in events)
    assert {"autograd.profiler.profile", "torch.profiler.profile"} <= logged
