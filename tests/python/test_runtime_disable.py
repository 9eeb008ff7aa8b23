"""disable() restores every original: the identity of every patched attribute, environment variables, import
hooks and jit's builtin table. Nothing is patched twice."""

from __future__ import annotations

import dataclasses
import os
import sys

import pytest
import torch
import torch.jit._builtins as jit_builtins
import torch.nn as nn
import torch.utils.data

import torchport.runtime as rt

_MISSING = object()

# attributes named by hand (not taken from the patcher's own records, so this list can catch a forgotten undo)
KEY_ATTRIBUTES = [
    (torch, "zeros"),
    (torch, "randn"),
    (torch, "load"),
    (torch, "Generator"),
    (torch, "set_default_device"),
    (torch, "get_autocast_gpu_dtype"),
    (torch.Tensor, "to"),
    (torch.Tensor, "cuda"),
    (torch.Tensor, "is_cuda"),
    (torch.Tensor, "new_zeros"),
    (nn.Module, "to"),
    (nn.Module, "cuda"),
    (nn.Linear, "__init__"),
    (torch.cuda, "is_available"),
    (torch.cuda, "memory_allocated"),
    (torch.cuda, "Stream"),
    (torch.cuda, "Event"),
    (torch.cuda, "FloatTensor"),
    (torch.distributed, "init_process_group"),
    (torch.distributed, "is_nccl_available"),
    (nn.parallel.DistributedDataParallel, "__init__"),
    (torch.utils.data.DataLoader, "__init__"),
    (torch.amp.GradScaler, "__init__"),
    (torch.amp.autocast_mode.autocast, "__init__"),
    (torch.profiler.profile, "__init__"),
]


def _own(owner: object, name: str) -> object:
    return owner.__dict__.get(name, _MISSING)


def test_disable_restores_every_patched_attribute() -> None:
    # the target mode patches Tensor.is_cuda too (the default keeps torch's truthful one)
    rt.enable("cpu", cuda_available="target")
    records = [(owner, name) for owner, name, _ in rt._active.patcher.records]
    rt.disable()
    assert len(records) > 150
    before = {(id(o), n): _own(o, n) for o, n in records}
    key_before = {(id(o), n): getattr(o, n) for o, n in KEY_ATTRIBUTES}
    meta_path, table_size = list(sys.meta_path), len(jit_builtins._get_builtin_table())

    rt.enable("cpu", cuda_available="target")
    changed = [(o, n) for o, n in records if _own(o, n) is not before[(id(o), n)]]
    assert len(changed) == len(records)  # everything really was patched
    assert all(getattr(o, n) is not key_before[(id(o), n)] for o, n in KEY_ATTRIBUTES)
    torch.zeros(1, device="cuda")
    rt.disable()

    assert [(o, n) for o, n in records if _own(o, n) is not before[(id(o), n)]] == []
    assert [(o, n) for o, n in KEY_ATTRIBUTES if getattr(o, n) is not key_before[(id(o), n)]] == []
    assert sys.meta_path == meta_path
    assert len(jit_builtins._get_builtin_table()) == table_size
    with pytest.raises((RuntimeError, AssertionError)):
        torch.zeros(1, device="cuda")  # really back to CUDA semantics


def test_nothing_is_patched_twice() -> None:
    rt.enable("cpu")
    try:
        first = rt._active
        n = len(first.patcher.records)
        rt.enable("cpu")  # same target: no-op
        assert rt._active is first and len(first.patcher.records) == n
        with pytest.raises(RuntimeError, match="already enabled"):
            rt.enable(dataclasses.replace(first.target, float64=False))  # another target
        assert torch.zeros(1, device="cuda").device.type == "cpu"
    finally:
        rt.disable()
    rt.disable()  # a second disable is harmless
    assert not rt.is_enabled()


def test_environment_and_imports_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    rt.enable("cpu")
    try:
        import pynvml  # served by the shim while enabled

        assert pynvml.nvmlDeviceGetCount() == 0
    finally:
        rt.disable()
    assert sys.modules.get("pynvml") is not pynvml
    assert os.environ["CUDA_LAUNCH_BLOCKING"] == "1"


def test_auto_disable_is_the_same_function() -> None:
    import importlib

    os.environ["TORCHPORT_TARGET"] = "cpu"
    try:
        auto = importlib.import_module("torchport.auto")
        auto.enable()
        assert rt.is_enabled()
        auto.disable()
        assert not rt.is_enabled()
    finally:
        del os.environ["TORCHPORT_TARGET"]
        rt.disable()


def test_references_captured_while_enabled_stop_redirecting() -> None:
    rt.enable("cpu")
    zeros, to, cuda_mem, cuda_stream, tcuda = (
        torch.zeros,
        torch.Tensor.to,
        torch.cuda.current_device,
        torch.cuda.Stream,
        torch.Tensor.cuda,
    )
    from torch.cuda import is_available, synchronize

    assert zeros(1, device="cuda").device.type == "cpu"  # redirected while on
    rt.disable()
    with pytest.raises((AssertionError, RuntimeError)):
        zeros(1, device="cuda")  # the truth: this torch has no CUDA
    with pytest.raises((AssertionError, RuntimeError)):
        to(torch.ones(1), "cuda")
    with pytest.raises((AssertionError, RuntimeError)):
        tcuda(torch.ones(1))
    with pytest.raises((AssertionError, RuntimeError)):
        cuda_mem()
    with pytest.raises((AssertionError, RuntimeError, TypeError)):
        cuda_stream()
    with pytest.raises((AssertionError, RuntimeError)):
        synchronize()
    assert is_available() is False


def test_restore_undoes_every_patch_even_if_one_step_fails() -> None:
    from torchport.runtime._patcher import RestoreError

    before = {(id(o), n): _own(o, n) for o, n in KEY_ATTRIBUTES}
    rt.enable("cpu")

    def broken() -> None:
        raise OSError("simulated failure")

    rt._active.patcher.undo.insert(0, broken)  # runs last among the undo steps
    rt._active.patcher.undo.append(broken)  # runs first
    with pytest.raises(RestoreError, match="simulated failure"):
        rt.disable()
    assert not rt.is_enabled()
    after = {(id(o), n): _own(o, n) for o, n in KEY_ATTRIBUTES}
    assert after == before


def test_enable_disable_are_thread_safe() -> None:
    import threading

    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def churn() -> None:
        try:
            barrier.wait()
            for _ in range(5):
                rt.enable("cpu")
                torch.zeros(1, device="cuda")
                rt.disable()
        except RuntimeError as e:  # another thread disabled between our enable and our call: the truth
            # (torch's own CUDA error: "Torch not compiled with CUDA enabled" on a CPU build, "Found no
            # NVIDIA driver on your system" on a CUDA build without a GPU)
            if not any(word in str(e) for word in ("CUDA", "cuda", "NVIDIA driver")):
                errors.append(e)
        except AssertionError:
            pass
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    before = {(id(o), n): _own(o, n) for o, n in KEY_ATTRIBUTES}
    threads = [threading.Thread(target=churn) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rt.disable()
    assert not errors, errors
    assert {(id(o), n): _own(o, n) for o, n in KEY_ATTRIBUTES} == before
