"""Issue 33: the quantized and nested factories that take `device=` (the installed torch's aten schemas with a
`Device? device` argument, and torch.nested's two constructors) under `--target cpu`: each is served on the
target with torch's own values, and logged. Without the redirect each raises on this CPU-only torch."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import pytest
import torch

from runtime_testlib import enabled, sites

warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*")


def _parts(t: torch.Tensor) -> list[list[float]]:
    return [x.tolist() for x in t.unbind()]


LIST = [[1.0, 2.0], [3.0, 4.0, 5.0]]
CALLS: dict[str, Callable[[Any], torch.Tensor]] = {
    "torch._empty_affine_quantized": lambda d: torch._empty_affine_quantized(
        [2, 3], scale=0.5, zero_point=1, dtype=torch.quint8, device=d
    ),
    "torch._empty_per_channel_affine_quantized": lambda d: torch._empty_per_channel_affine_quantized(
        [2, 3], scales=torch.tensor([0.5, 0.25]), zero_points=torch.tensor([1, 2]), axis=0, dtype=torch.qint8,
        device=d,
    ),
    "torch._nested_tensor_from_tensor_list": lambda d: torch._nested_tensor_from_tensor_list(
        [torch.tensor(x) for x in LIST], device=d
    ),
    "torch.nested.nested_tensor": lambda d: torch.nested.nested_tensor(
        [torch.tensor(x) for x in LIST], device=d
    ),
    "torch.nested.as_nested_tensor": lambda d: torch.nested.as_nested_tensor(
        [torch.tensor(x) for x in LIST], None, d  # device positional, as torch.nested's own code passes it
    ),
}  # fmt: skip


def _value(api: str, t: torch.Tensor) -> Any:
    if api == "torch._empty_affine_quantized":
        return (t.shape, t.dtype, t.q_scale(), t.q_zero_point())
    if api == "torch._empty_per_channel_affine_quantized":
        return (t.shape, t.dtype, t.q_per_channel_scales().tolist(), t.q_per_channel_zero_points().tolist())
    return (t.is_nested, _parts(t))


@pytest.mark.parametrize("api", sorted(CALLS))
def test_without_the_redirect_cuda_fails_here(api: str) -> None:
    with pytest.raises((RuntimeError, NotImplementedError, AssertionError)):
        CALLS[api]("cuda")


@pytest.mark.parametrize("api", sorted(CALLS))
@pytest.mark.parametrize("dev", ["cuda", "cuda:0", torch.device("cuda", 0)])
def test_served_on_cpu_with_torch_s_values_and_logged(api: str, dev: object) -> None:
    want = _value(api, CALLS[api]("cpu"))  # plain CPU torch, before the redirect
    with enabled("cpu") as s:
        got = CALLS[api](dev)
    assert got.device.type == "cpu"
    assert _value(api, got) == want
    (line,) = [x for x in sites(s) if x.api == api]
    mapped = "'cpu'" if isinstance(dev, str) else "device(type='cpu')"
    assert (line.after, line.cls) == (f"{api}(device={mapped})", "match")
    assert line.filename == __file__


def test_as_nested_tensor_keeps_torch_s_argument_errors() -> None:
    with enabled("cpu"):
        with pytest.raises(TypeError, match="multiple values for argument 'device'"):
            torch.nested.as_nested_tensor([torch.ones(2)], None, "cuda", device="cuda")
