"""AMP: torch.autocast("cuda"), torch.cuda.amp.autocast / GradScaler / custom_fwd, get_autocast_gpu_dtype, and
the unchanged AMP training script whose losses must equal the hand-written CPU script's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch

from runtime_testlib import FIXTURES, NO_CUDA, enabled, run_python, run_torchport, sites


def test_autocast_cuda_computes_like_cpu_autocast() -> None:
    torch.manual_seed(0)
    lin, x = torch.nn.Linear(4, 3), torch.randn(2, 4)
    with torch.autocast("cpu", dtype=torch.float16):
        want = lin(x)
    with enabled("cpu") as s:
        with torch.autocast("cuda", dtype=torch.float16):
            got = lin(x)
        with torch.cuda.amp.autocast():  # default dtype float16, as on CUDA
            got2 = lin(x)
            assert torch.is_autocast_enabled()
            assert torch.get_autocast_gpu_dtype() == torch.float16
        assert not torch.is_autocast_enabled()
        apis = {site.api for site in sites(s)}
    assert got.dtype == got2.dtype == torch.float16
    assert torch.equal(got, want) and torch.equal(got2, want)
    assert {"torch.autocast", "torch.is_autocast_enabled", "torch.get_autocast_gpu_dtype"} <= apis


def test_grad_scaler_scales_on_the_target() -> None:
    with enabled("cpu"):
        scaler = torch.cuda.amp.GradScaler(init_scale=1024.0)
        scaler2 = torch.amp.GradScaler()  # device defaults to "cuda"
        assert scaler.is_enabled() and scaler2.is_enabled()
        w = torch.nn.Parameter(torch.ones(2))
        opt = torch.optim.SGD([w], lr=0.1)
        loss = (w * 3).sum()
        scaler.scale(loss).backward()
        assert torch.equal(w.grad, torch.full((2,), 3 * 1024.0))  # scaled
        scaler.step(opt)  # unscales first
        scaler.update()
    assert torch.allclose(w.detach(), torch.full((2,), 1 - 0.3))


def test_custom_fwd_casts_for_the_target() -> None:
    with enabled("cpu"):

        class Double(torch.autograd.Function):
            @staticmethod
            @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
            def forward(ctx, x):
                return x * 2

            @staticmethod
            @torch.cuda.amp.custom_bwd
            def backward(ctx, g):
                return g * 2

        x = torch.ones(2, dtype=torch.bfloat16, requires_grad=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = Double.apply(x)
        assert y.dtype == torch.float32  # cast_inputs applied: autocast was on for the target
        y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_unchanged_amp_training_script_matches_hand_written_cpu(tmp_path: Path) -> None:
    script = str(FIXTURES / "train_amp.py")
    plain = run_python([script, str(tmp_path / "plain.json")])
    assert plain.returncode != 0 and re.search(NO_CUDA, plain.stderr)  # the CUDA script cannot run here as is

    log = tmp_path / "run.log"
    run = run_torchport(["run", "--target", "cpu", "--log", str(log), script, str(tmp_path / "run.json")])
    assert run.returncode == 0, run.stderr
    ref = run_python([str(FIXTURES / "train_amp_cpu.py"), str(tmp_path / "cpu.json")])
    assert ref.returncode == 0, ref.stderr

    got = json.loads((tmp_path / "run.json").read_text())
    want = json.loads((tmp_path / "cpu.json").read_text())
    assert len(got["losses"]) == 16
    assert got["losses"] == want["losses"]  # same seed, same ops: equal loss for loss
    assert got["losses"][-1] < got["losses"][0]  # it trained
    assert got["param_device"] == "cpu"
    assert got["stats"]["elapsed_ms"] > 0 and got["stats"]["allocated"] == 0
    text = log.read_text()
    assert "[match] GradScaler(device='cuda') -> GradScaler(device='cpu')" in text
    assert "torch.autocast(device_type='cuda') -> torch.autocast(device_type='cpu')" in text
    assert "[modified] DataLoader(pin_memory=True" in text
    assert "torchport:" in run.stderr and "redirected call site(s)" in run.stderr


def test_autocast_cuda_without_dtype_is_a_logged_dtype_change_on_cpu() -> None:
    """torch.autocast("cuda") computes in float16 on CUDA; on cpu the default is bfloat16: `mismatch`, never
    `match`. With dtype= given, or through torch.cuda.amp.autocast (which passes float16), it is a match."""
    lin, x = torch.nn.Linear(4, 3), torch.randn(2, 4)
    with enabled("cpu") as s:
        with torch.autocast("cuda"):
            default = lin(x)
        with torch.autocast("cuda", dtype=torch.float16):
            pinned = lin(x)
        with torch.cuda.amp.autocast():
            legacy = lin(x)
        by_line = {site.lineno: site for site in sites(s) if site.api == "torch.autocast"}
    assert default.dtype == torch.bfloat16 and pinned.dtype == legacy.dtype == torch.float16
    classes = [by_line[k].cls for k in sorted(by_line)]
    assert classes == ["mismatch", "match", "match"], classes
    why = by_line[min(by_line)].why
    assert "bfloat16" in why and "float16" in why and "dtype=torch.float16" in why
