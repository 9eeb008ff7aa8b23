"""`torch.device(N)` with a bare int (OpenNMT-py's `torch.device(device_id)`, onmt/inputters/
dynamic_iterator.py:419). torch 2.13 reads N as an index of the current accelerator
(torch/csrc/utils/python_arg_parser.h, `deviceFromLong` -> `at::getAccelerator(true)`): CUDA where the script
was written, an error on this CPU-only machine. Under the redirect it is the target's device, logged per call
site, and `torch.device` keeps behaving as torch's class for everything else."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch

import torchport.runtime as rt
from runtime_testlib import enabled, sites

REAL = type(torch.device("cpu"))


def _torch_answer() -> str:
    """What torch itself makes of torch.device(0) here: a CPU build raises (no accelerator), a CUDA build
    without a GPU (torch 2.14.1 from PyPI, tools/runtime_tests_torch.sh) answers cuda:0."""
    try:
        return f"gives {REAL(0).type}"
    except RuntimeError as e:
        return f"raises {e}"


TORCH_ANSWER = _torch_answer()


def _sites(session: object, before: str) -> list[object]:
    found = [x for x in sites(session) if x.api == "torch.device" and x.before == before]
    assert found, [(x.before, x.after) for x in sites(session)]
    return found


def test_without_the_redirect_torch_does_not_give_the_cpu_for_a_bare_index() -> None:
    # the premise: torch itself cannot answer with the CPU: a CPU build has no accelerator to read the index
    # of, a CUDA build reads it as CUDA's
    if TORCH_ANSWER.startswith("raises"):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
            torch.device(0)
    else:
        assert torch.device(0) == REAL("cuda", 0) and torch.version.cuda is not None


def test_a_bare_index_is_the_target_device_and_is_logged() -> None:
    with enabled("cpu") as s:
        d0 = torch.device(0)
        d1 = torch.device(1)
        dk = torch.device(device=0)
        dn = torch.device(np.int64(0))
    assert (d0, d1, dk, dn) == (torch.device("cpu"),) * 4
    assert type(d0) is REAL  # torch's own device objects, not a stand-in's
    zero = _sites(s, "torch.device(0)")  # three call sites: positional, device=, numpy integer
    assert len(zero) == 3
    refused = TORCH_ANSWER.startswith("raises")
    torch_says = "Cannot access accelerator" if refused else "torch here gives cuda:N"
    for a in zero:
        assert (a.after, a.cls) == ("device(type='cpu')", "match")  # type: ignore[attr-defined]
        assert "index of the accelerator" in a.why and torch_says in a.why  # type: ignore[attr-defined]
    (b,) = _sites(s, "torch.device(1)")
    assert (b.after, b.cls) == ("device(type='cpu')", "modified")  # type: ignore[attr-defined]
    assert "the CUDA index is dropped" in b.why  # type: ignore[attr-defined]


def test_an_indexed_target_keeps_the_index() -> None:
    with enabled("xpu", check=False) as s:
        assert torch.device(3) == torch.device("xpu", 3)
        assert torch.device(0) == torch.device("xpu", 0)
    assert {x.cls for x in sites(s) if x.api == "torch.device"} == {"match"}


def test_everything_else_is_torch_s_own_answer() -> None:
    with enabled("cpu") as s:
        assert torch.device("cuda", 1) == REAL("cuda", 1)  # kept, as every CUDA device object is
        assert torch.device("cpu") == REAL("cpu")
        assert torch.device(type="meta") == REAL("meta")
        with pytest.raises(RuntimeError, match="Device index must not be negative"):
            torch.device(-1)  # torch's error, not a cpu device
        with pytest.raises(TypeError):
            torch.device(True)  # a bool is not an index to torch either
        with pytest.raises(RuntimeError, match="Expected one of"):
            torch.device("nodevice")
    assert not [x for x in sites(s) if x.api == "torch.device"]


def test_it_still_acts_as_torch_s_class() -> None:
    with enabled("cpu"):
        dev = torch.device("cpu")
        assert isinstance(dev, torch.device) and issubclass(REAL, torch.device)
        assert not isinstance("cpu", torch.device)
        # what modules captured before or during the redirect compare against (dynamo's constant types)
        assert torch.device == REAL and hash(torch.device) == hash(REAL)
        assert type(dev) in {torch.device} and type(dev) in (torch.device, torch.dtype)
        assert pickle.loads(pickle.dumps(dev)) == dev and copy.deepcopy(torch.device(0)) == dev
        with torch.device("cuda"):  # the context manager is the device object's own
            assert torch.empty(1).device == dev
        assert torch.zeros(1).to(torch.device(0)).device == dev

        def f(x: torch.Tensor) -> torch.Tensor:
            return x.to(torch.device("cpu")) + 1

        assert torch.compile(f, backend="eager", fullgraph=True)(torch.ones(2)).tolist() == [2.0, 2.0]


def test_disable_puts_torch_s_class_back_and_a_captured_stand_in_stops_redirecting() -> None:
    before = torch.device
    with enabled("cpu"):
        captured = torch.device
        assert captured is not before
    assert torch.device is before
    # disabled, the captured stand-in gives torch's own answer
    if TORCH_ANSWER.startswith("raises"):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            captured(0)
    else:
        assert captured(0) == REAL(0) == REAL("cuda", 0)
    assert captured("cpu") == REAL("cpu")


def test_a_script_under_torchport_run(tmp_path: object) -> None:
    from pathlib import Path

    from runtime_testlib import run_torchport

    d = Path(str(tmp_path))
    (d / "s.py").write_text(
        "import torch\n"
        "device_id = 0\n"
        "device = torch.device(device_id) if device_id >= 0 else torch.device('cpu')\n"
        "print('DEV', device, torch.ones(2, device=device).sum().item())\n"
    )
    log = d / "run.log"
    done = run_torchport(["run", "--target", "cpu", "--quiet", "--log", str(log), str(d / "s.py")], cwd=d)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "DEV cpu 2.0" in done.stdout
    line = next(ln for ln in log.read_text().splitlines() if "torch.device(0)" in ln)
    assert f"{d / 's.py'}:3: [match] torch.device(0) -> device(type='cpu')" in line, line
    assert not rt.is_enabled()
