"""Typed storages as old checkpoints and libraries use them (issue 33 §3): torch.cuda.FloatStorage & co. stay
classes, and a storage's is_cuda agrees with its tensor's under the redirect."""

from __future__ import annotations

import warnings

import pytest
import torch

from runtime_testlib import enabled, sites

warnings.filterwarnings("ignore", message="TypedStorage is deprecated")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_plain_cpu_torch_answers_false() -> None:
    # the reference: plain CPU torch, no redirect
    x = torch.ones(3)
    assert isinstance(x.storage(), torch.cuda.FloatStorage) is False
    assert x.storage().is_cuda is False and x.is_cuda is False


def test_truth_mode_answers_like_plain_cpu_torch() -> None:
    with enabled("cpu") as s:
        x = torch.ones(3, device="cuda")
        assert isinstance(torch.cuda.FloatStorage, type)
        assert isinstance(x.storage(), torch.cuda.FloatStorage) is False
        assert x.storage().is_cuda is False and x.is_cuda is False
        assert not [site for site in sites(s) if "Storage" in site.api and "is_cuda" in site.api]


def test_user_mode_storage_answers_follow_tensor_is_cuda() -> None:
    with enabled("cpu", cuda_available="user") as s:
        x = torch.ones(3).cuda()
        st = x.storage()
        assert x.is_cuda is True
        assert st.is_cuda is True and x.untyped_storage().is_cuda is True
        assert isinstance(st, torch.cuda.FloatStorage) is True
        assert isinstance(st, torch.cuda.HalfStorage) is False  # the dtype still counts
        assert isinstance(torch.ones(2, dtype=torch.float16).cuda().storage(), torch.cuda.HalfStorage)
        lines = {site.api: site for site in sites(s)}
    assert lines["TypedStorage.is_cuda"].cls == "modified"
    assert lines["isinstance(torch.cuda.FloatStorage)"].cls == "modified"


def test_typed_storage_classes_construct_on_the_target_and_subclass_checks_hold() -> None:
    with enabled("cpu", cuda_available="target"):
        st = torch.cuda.FloatStorage(4)
        assert type(st) is torch.TypedStorage and st.dtype == torch.float32 and st.device.type == "cpu"
        assert isinstance(st, torch.cuda.FloatStorage)
        assert issubclass(torch.cuda.FloatStorage, torch.TypedStorage)
        assert torch.cuda.FloatStorage.dtype == torch.float32
        with pytest.raises(TypeError):
            isinstance(st, torch.cuda.FloatStorage(2))  # an instance is not a class: torch's own error
    # disable() puts torch's classes back
    assert torch.cuda.FloatStorage.__module__ == "torch.cuda" and type(torch.cuda.FloatStorage).__name__ == (
        "_LegacyStorageMeta"
    )
