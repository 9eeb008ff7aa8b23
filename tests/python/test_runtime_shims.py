"""apex and pynvml when a script imports them: apex.amp / FusedAdam / FusedLayerNorm go to native torch,
pynvml answers instead of crashing. Neither package is installed here (NVIDIA apex and NVML need CUDA)."""

from __future__ import annotations

import pytest
import torch

from runtime_testlib import enabled, sites


def test_apex_maps_to_native_and_trains() -> None:
    with enabled("cpu") as s:
        from apex import amp
        from apex.normalization import FusedLayerNorm
        from apex.optimizers import FusedAdam

        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), FusedLayerNorm(4)).cuda()
        assert isinstance(model[1], torch.nn.LayerNorm)
        opt = FusedAdam(model.parameters(), lr=0.01, weight_decay=0.01)
        assert isinstance(opt, torch.optim.AdamW)
        model, opt = amp.initialize(model, opt, opt_level="O1")
        x = torch.randn(8, 4, device="cuda")
        first = None
        for _ in range(5):
            loss = model(x).float().pow(2).mean()
            first = first if first is not None else loss.item()
            with amp.scale_loss(loss, opt) as scaled:
                scaled.backward()
            opt.step()
            opt.zero_grad()
        classes = {site.api: site.cls for site in sites(s)}
    assert loss.item() < first
    assert classes["apex.amp.initialize"] == "modified"
    assert classes["apex.optimizers.FusedAdam"] == "modified"
    with pytest.raises(ImportError):
        import apex  # noqa: F401 - gone again after disable


def test_apex_o2_is_called_a_mismatch() -> None:
    with enabled("cpu") as s:
        from apex import amp

        amp.initialize(torch.nn.Linear(2, 2), opt_level="O2")
        site = next(x for x in sites(s) if x.api == "apex.amp.initialize")
    assert site.cls == "mismatch" and "O2" in site.why


def test_pynvml_answers_for_the_target() -> None:
    with enabled("cpu") as s:
        import pynvml

        pynvml.nvmlInit()
        assert pynvml.nvmlDeviceGetCount() == 0  # no NVIDIA GPU on the cpu target
        with pytest.raises(pynvml.NVMLError, match="no device 0"):
            pynvml.nvmlDeviceGetHandleByIndex(0)
        with pytest.raises(pynvml.NVMLError, match="not supported on target cpu"):
            pynvml.nvmlDeviceGetPowerUsage(None)
        pynvml.nvmlShutdown()
        count = next(x for x in s.log.sites.values() if x.api == "pynvml.nvmlDeviceGetCount")
    # the log line gives the call and the answer, not a placeholder
    assert (count.before, count.after, count.cls) == ("pynvml.nvmlDeviceGetCount()", "0", "modified")


def test_no_shims_option() -> None:
    with enabled("cpu", shims=()):
        with pytest.raises(ImportError):
            import apex  # noqa: F401
