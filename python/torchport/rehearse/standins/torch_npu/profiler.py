"""Stand-in of torch_npu.profiler: torch.profiler with ProfilerActivity.NPU (torch_npu aliases
ProfilerActivity.PrivateUse1 as NPU, reference §1.1)."""

from torch.profiler import profile, schedule, tensorboard_trace_handler  # noqa: F401


class ProfilerActivity:
    from torch.profiler import ProfilerActivity as _PA

    CPU = _PA.CPU
    NPU = _PA.PrivateUse1


__all__ = ["profile", "schedule", "tensorboard_trace_handler", "ProfilerActivity"]
