"""Device arguments: strings, torch.device objects, bare ints in factories, Tensor/Module methods, nn layers,
Generator, default device. On this CPU-only torch every one of these calls raises without the redirect."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from runtime_testlib import NO_CUDA, enabled, sites


def test_without_redirect_cuda_devices_fail_here() -> None:
    with pytest.raises((RuntimeError, AssertionError)):
        torch.zeros(2, device="cuda")
    with pytest.raises((RuntimeError, AssertionError)):
        torch.ones(2).cuda()


@pytest.mark.parametrize("dev", ["cuda", "cuda:0", torch.device("cuda"), torch.device("cuda", 0), 0])
def test_factories_take_every_device_form(dev: object) -> None:
    with enabled("cpu"):
        for make in (
            lambda: torch.zeros(2, 3, device=dev),
            lambda: torch.ones(2, device=dev),
            lambda: torch.empty(4, device=dev),
            lambda: torch.full((2,), 7.0, device=dev),
            lambda: torch.arange(5, device=dev),
            lambda: torch.randn(3, device=dev),
            lambda: torch.tensor([1, 2], device=dev),
            lambda: torch.eye(2, device=dev),
            lambda: torch.zeros_like(torch.ones(2), device=dev),
            lambda: torch.randperm(4, device=dev),
            lambda: torch.linspace(0, 1, 3, device=dev),
        ):
            t = make()
            assert t.device.type == "cpu"
    assert torch.full((2,), 7.0).tolist() == [7.0, 7.0]


def test_values_are_the_cpu_values() -> None:
    with enabled("cpu"):
        torch.manual_seed(3)
        a = torch.randn(5, device="cuda")
        b = torch.arange(6, device="cuda:0").reshape(2, 3)
    torch.manual_seed(3)
    assert torch.equal(a, torch.randn(5))
    assert b.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_tensor_methods() -> None:
    x = torch.arange(4.0)
    with enabled("cpu"):
        assert x.cuda().device.type == "cpu"
        assert x.cuda(0).device.type == "cpu"
        assert x.to("cuda").device.type == "cpu"
        assert x.to("cuda:0", torch.float16).dtype == torch.float16
        assert x.to(device=torch.device("cuda")).device.type == "cpu"
        assert x.to(0).device.type == "cpu"
        assert x.to(torch.float64).dtype == torch.float64  # dtype-only calls untouched
        assert x.new_zeros(3, device="cuda").device.type == "cpu"
        assert x.new_tensor([1.0], device="cuda:0").tolist() == [1.0]
        # the default tells the truth: is_available() is False, so no tensor is a CUDA tensor
        assert x.cuda().is_cuda is False
        assert x.type("torch.cuda.LongTensor").dtype == torch.int64
        assert x.pin_memory("cuda") is x
    assert x.is_cuda is False
    with enabled("cpu", cuda_available="target"):
        assert x.cuda().is_cuda is True  # the target mode: True on the target device, like is_available()
    assert x.is_cuda is False


def test_module_methods_and_layer_constructors() -> None:
    with enabled("cpu") as s:
        m = nn.Sequential(nn.Linear(3, 2, device="cuda"), nn.LayerNorm(2, device="cuda:0"))
        assert all(p.device.type == "cpu" for p in m.parameters())
        assert m.cuda() is m
        assert m.to("cuda:0") is m
        conv = nn.Conv2d(1, 1, 3, device=torch.device("cuda"))
        emb = nn.Embedding(4, 2, device="cuda")
        assert conv.weight.device.type == emb.weight.device.type == "cpu"
        lazy = nn.Linear(2, 2, device="meta").to_empty(device="cuda")
        assert lazy.weight.device.type == "cpu"
        apis = {site.api for site in sites(s)}
    assert {"nn.Linear", "nn.LayerNorm", "Module.cuda", "Module.to", "nn.Conv2d", "Module.to_empty"} <= apis


def test_generator_and_default_device() -> None:
    with enabled("cpu"):
        g = torch.Generator(device="cuda")
        assert isinstance(g, torch.Generator) and isinstance(torch.default_generator, torch.Generator)
        g.manual_seed(7)
        a = torch.rand(3, generator=g, device="cuda")
        with torch.device("cuda"):
            b = torch.zeros(2)
        torch.set_default_device("cuda")
        try:
            c = torch.ones(1)
        finally:
            torch.set_default_device(None)
    assert torch.equal(a, torch.rand(3, generator=torch.Generator().manual_seed(7)))
    assert b.device.type == c.device.type == "cpu"


def test_index_other_than_zero_is_logged_as_modified_on_cpu() -> None:
    with enabled("cpu") as s:
        torch.zeros(1, device="cuda:1")
        torch.zeros(1, device="cuda:0")
        by_before = {site.before: site for site in sites(s)}
    assert by_before["torch.zeros(device='cuda:1')"].cls == "modified"
    assert "index is dropped" in by_before["torch.zeros(device='cuda:1')"].why
    assert by_before["torch.zeros(device='cuda:0')"].cls == "match"


def test_is_cuda_device_helper() -> None:
    from torchport.runtime import is_cuda_device

    assert is_cuda_device("cuda:0") and not is_cuda_device("cpu")
    with enabled("cpu"):
        x = torch.ones(1, device="cuda")
        assert x.device.type != "cuda"  # the honest device type
        assert is_cuda_device(x) and is_cuda_device(x.device) and is_cuda_device(torch.device("cuda"))


def _calls() -> list[tuple[str, object]]:
    """Calls whose device, dtype and values must not depend on which wrapper path serves them."""
    x = torch.arange(4.0)
    other = torch.zeros(1, dtype=torch.float16)
    m = nn.Linear(2, 2, device="meta")
    return [
        ("zeros cuda", lambda: torch.zeros(2, device="cuda")),
        ("zeros cuda:0 + dtype", lambda: torch.zeros(2, dtype=torch.float64, device="cuda:0")),
        ("zeros device=None", lambda: torch.zeros(2, device=None)),
        ("zeros no device", lambda: torch.zeros(2, 3)),
        ("zeros torch.device", lambda: torch.zeros(2, device=torch.device("cuda"))),
        ("full int device", lambda: torch.full((2,), 3.0, device=0)),
        ("tensor kw", lambda: torch.tensor([1, 2], device="cuda", dtype=torch.int32)),
        ("new_ones", lambda: x.new_ones(2, device="cuda")),
        ("to str", lambda: x.to("cuda")),
        ("to no args", lambda: x.to()),
        ("to dtype", lambda: x.to(torch.float16)),
        ("to tensor", lambda: x.to(other)),
        ("to str + kw", lambda: x.to("cuda", non_blocking=True)),
        ("to dtype kw", lambda: x.to(dtype=torch.float64)),
        ("to device kw", lambda: x.to(device="cuda:0", dtype=torch.float64)),
        ("layer positional device", lambda: nn.Linear(2, 2, True, "cuda").weight),
        ("to_empty", lambda: m.to_empty(device="cuda").weight.device),  # uninitialised memory: no values
        # issue 33 §4: the fast paths of .cuda() and of torch.device arguments
        ("cuda()", lambda: x.cuda()),
        ("cuda(non_blocking)", lambda: x.cuda(non_blocking=True)),
        ("cuda(0)", lambda: x.cuda(0)),
        ("cuda(memory_format)", lambda: torch.ones(1, 2, 2, 2).cuda(memory_format=torch.channels_last)),
        ("to torch.device cuda 0", lambda: x.to(torch.device("cuda", 0))),
        ("to torch.device cuda 0 + dtype", lambda: x.to(torch.device("cuda", 0), torch.float64, False)),
        ("to torch.device cpu", lambda: x.to(torch.device("cpu"))),
        ("to torch.device + kw", lambda: x.to(torch.device("cuda"), dtype=torch.int64)),
        (
            "model.cuda()",
            lambda: nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).double().cuda()[1].running_mean,
        ),
        ("model.cuda() weight", lambda: nn.Linear(2, 3).cuda().weight),
        ("model.cuda(0)", lambda: nn.Linear(2, 3).cuda(0).bias),
        ("lazy module .cuda()", lambda: _lazy_cuda()),
    ]


def _lazy_cuda() -> torch.Tensor:
    lazy = nn.LazyLinear(3).cuda()
    return lazy(torch.ones(1, 2, device="cuda"))


def _fingerprint(t: object) -> tuple[object, ...]:
    if isinstance(t, torch.device):
        return (t.type,)
    assert isinstance(t, torch.Tensor)
    return (t.device.type, t.dtype, tuple(t.shape), t.tolist())


@pytest.mark.parametrize("name", [n for n, _ in _calls()])
def test_fast_path_gives_what_the_logged_path_gives(name: str) -> None:
    """The wrappers have a fast path when nothing is logged (track_sites=False) and a general one when each
    call site is recorded: both give the same tensor, and that tensor is on the CPU."""
    call = dict(_calls())[name]
    got = {}
    for track in (False, True):
        with enabled("cpu", track_sites=track):
            torch.manual_seed(0)
            got[track] = _fingerprint(call())  # type: ignore[operator]
    assert got[False] == got[True]
    assert got[False][0] == "cpu"


def test_cuda_fast_path_returns_the_same_objects_as_torch() -> None:
    # x.cuda() of a tensor already on the device is the tensor itself (as on CUDA); model.cuda() returns the
    # module; after disable() the CUDA originals are back
    x = torch.ones(2)
    model = nn.Linear(2, 2)
    w = model.weight
    with enabled("cpu", track_sites=False):
        assert x.cuda() is x and x.to(torch.device("cuda", 0)) is x
        assert model.cuda() is model and model.weight is w
    for call in (x.cuda, lambda: x.to(torch.device("cuda", 0))):
        with pytest.raises((RuntimeError, AssertionError), match=NO_CUDA):  # torch's own error
            call()


def test_to_keeps_torch_s_own_keyword_errors() -> None:
    """The first positional argument of the Tensor.to wrapper has a private name: a keyword torch does not
    know is still torch's TypeError, not taken as a device."""
    x = torch.ones(2)
    with enabled("cpu", track_sites=False):
        with pytest.raises(TypeError):
            x.to(d="cuda")  # type: ignore[call-overload]
        with pytest.raises(TypeError):
            torch.zeros(2, devices="cuda")  # type: ignore[call-overload]


@pytest.mark.parametrize(
    "bad", ["cuda: 1", "cuda:01", "cuda:" + "9" * 40, "cuda:\u0663", "cuda:1:2", "cuda:-1"]
)
def test_a_device_string_torch_refuses_is_refused_as_without_torchport(bad: str) -> None:
    # fuzz/python/device_string_fuzz.py found "cuda:99...9" turned into a valid "cpu", and
    # "cuda: 1" into the target's device 1: a typo the script would have seen became a silent run.
    with pytest.raises(RuntimeError) as plain:
        torch.device(bad)
    with enabled("cpu"):
        with pytest.raises(RuntimeError) as redirected:
            torch.zeros(2, device=bad)
    assert str(plain.value).splitlines()[0] in str(redirected.value)


def test_an_index_torch_wraps_is_passed_as_written() -> None:
    # torch reads a device index into 8 bits: "cuda:982" is device -42. fuzz/python/device_string_fuzz.py
    # found it mapped to "cpu:-42"-style strings that torch refuses; the index now goes as written.
    from torchport.runtime._devices import DeviceMapper
    from torchport.targets import get_target

    xpu = DeviceMapper(get_target("xpu"))
    assert xpu.map("cuda:982") == "xpu:982"
    assert torch.device(xpu.map("cuda:982")).index == torch.device("cuda:982").index
    assert xpu.map("cuda:3") == "xpu:3" and xpu.map("cuda") == "xpu"
