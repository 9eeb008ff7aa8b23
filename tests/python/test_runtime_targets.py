"""The other targets run through the same code path with different data: their decisions are tested here
without their hardware (device strings, backends, environment variables), and so is the clear error when a
target's vendor package or device is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from runtime_testlib import run_python
from torchport.runtime import _session, cli
from torchport.runtime._devices import DeviceMapper
from torchport.targets import TARGETS, vendor_package_missing

# GUIDE §2 targets table, read by hand: device string, backend, visible-devices variable
GUIDE = {
    "npu": ("npu", "hccl", ("ASCEND_RT_VISIBLE_DEVICES",)),
    "mlu": ("mlu", "cncl", ("MLU_VISIBLE_DEVICES",)),
    "musa": ("musa", "mccl", ("MUSA_VISIBLE_DEVICES",)),
    "xpu": ("xpu", "xccl", ("ZE_AFFINITY_MASK",)),
    "mps": ("mps", "gloo", ()),
    "hpu": ("hpu", "hccl", ("HABANA_VISIBLE_MODULES",)),
    "cpu": ("cpu", "gloo", ()),
}


@pytest.mark.parametrize("name", sorted(GUIDE))
def test_table_matches_the_guide(name: str) -> None:
    t = TARGETS[name]
    assert (t.device_type, t.backend, t.visible_devices_env) == GUIDE[name]
    if t.visible_devices_env:
        assert t.env_map["CUDA_VISIBLE_DEVICES"] == t.visible_devices_env[0]
    assert t.sources.get("device_type"), "every target records where its facts come from"


def test_in_tree_facts_match_the_installed_torch() -> None:
    import torch.distributed as dist

    for name in ("cpu", "xpu", "mps"):
        t = TARGETS[name]
        assert dist.Backend.default_device_backend_map[t.device_type] == t.backend
        assert torch.get_device_module(t.device_type).__name__ == t.device_module
    for t in TARGETS.values():
        if t.profiler_activity:
            assert hasattr(torch.profiler.ProfilerActivity, t.profiler_activity)


def test_device_strings_per_target() -> None:
    npu = DeviceMapper(TARGETS["npu"])
    assert npu.map("cuda") == "npu" and npu.map("cuda:1") == "npu:1" and npu.map("cpu") == "cpu"
    assert npu.classify("cuda:1") == ("match", "")
    mps = DeviceMapper(TARGETS["mps"])
    assert mps.map("cuda:1") == "mps"
    assert mps.classify("cuda:1")[0] == "modified"
    xpu = DeviceMapper(TARGETS["xpu"])
    assert xpu.map(torch.device("cuda", 2)) == torch.device("xpu", 2)
    assert xpu.map(3) == torch.device("xpu", 3)
    assert xpu.map("cuda:x") == "cuda:x"  # not a device string: torch reports its own error
    assert xpu.map(True) is True  # a bool is not an ordinal


def _env_session(name: str) -> object:
    from torchport.runtime import _EnvOnly

    return _EnvOnly(TARGETS[name])


def test_cuda_environment_maps_per_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    monkeypatch.setenv("TORCH_NCCL_BLOCKING_WAIT", "1")
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("TORCH_CNCL_BLOCKING_WAIT", raising=False)
    npu = _env_session("npu")
    npu.map_env()
    import os

    try:
        assert os.environ["ASCEND_RT_VISIBLE_DEVICES"] == "2,3"
        assert any("TORCH_NCCL_BLOCKING_WAIT" in w for w in npu.warnings)  # npu: no equivalent known
    finally:
        npu.restore()
    assert "ASCEND_RT_VISIBLE_DEVICES" not in os.environ

    mlu = _env_session("mlu")
    mlu.map_env()
    try:
        assert os.environ["MLU_VISIBLE_DEVICES"] == "2,3"
        assert os.environ["TORCH_CNCL_BLOCKING_WAIT"] == "1"  # prefix mapping
    finally:
        mlu.restore()

    cpu = _env_session("cpu")
    cpu.map_env()
    assert any("CUDA_VISIBLE_DEVICES=2,3 is set but cpu has no equivalent" in w for w in cpu.warnings)


@pytest.mark.parametrize(
    ("name", "package"), [("npu", "torch_npu"), ("mlu", "torch_mlu"), ("musa", "torch_musa")]
)
def test_missing_vendor_package_is_a_clear_error(
    name: str, package: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not vendor_package_missing(TARGETS[name]):
        pytest.skip(f"{package} is installed here")
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    code = cli.main(["--target", name, str(script)])
    err = capsys.readouterr().err
    assert code == 2
    assert package in err and "install" in err and "Traceback" not in err
    assert err.startswith("torchport run: error: target ")


def test_hpu_names_habana() -> None:
    t = TARGETS["hpu"]
    if not vendor_package_missing(t):
        pytest.skip("habana_frameworks installed")
    with pytest.raises(_session.TargetUnavailable, match="habana_frameworks"):
        _session.check_available(t)


def test_importable_but_no_device_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if torch.xpu.is_available():
        pytest.skip("an XPU is present")
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    assert cli.main(["--target", "xpu", str(script)]) == 2
    err = capsys.readouterr().err
    assert "is importable but no Intel GPU (XPU) device is visible" in err and "Traceback" not in err


def test_auto_picks_cpu_here_and_unknown_target_fails(capsys: pytest.CaptureFixture[str]) -> None:
    if torch.accelerator.current_accelerator() is None:
        assert _session.resolve_target("auto").name == "cpu"
    assert cli.main(["--target", "tpu", "x.py"]) == 2
    assert "unknown target 'tpu'" in capsys.readouterr().err


def test_import_auto_with_missing_package_exits_2_without_traceback() -> None:
    if not vendor_package_missing(TARGETS["npu"]):
        pytest.skip("torch_npu installed")
    done = run_python(["-c", "import torchport.auto\nprint('not reached')"], {"TORCHPORT_TARGET": "npu"})
    assert done.returncode == 2
    assert "torch_npu" in done.stderr and "Traceback" not in done.stderr and "not reached" not in done.stdout


def _pretend_accelerator(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    monkeypatch.setattr(
        torch.accelerator, "current_accelerator", lambda check_available=False: torch.device(kind)
    )


def test_auto_on_a_cuda_machine_redirects_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    import torchport.runtime as rt

    _pretend_accelerator(monkeypatch, "cuda")
    zeros, is_available = torch.zeros, torch.cuda.is_available
    rt.enable("auto", track_sites=True)
    try:
        assert rt.current_target() is not None and rt.current_target().device_type == "cuda"
        assert rt._active.patcher.records == []  # nothing patched: CUDA code runs on CUDA
        assert torch.zeros is zeros and torch.cuda.is_available is is_available
        assert "CUDA is present" in rt.summary() and "nothing is redirected" in rt.summary()
    finally:
        rt.disable()


def test_auto_picks_the_present_in_tree_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    _pretend_accelerator(monkeypatch, "xpu")
    assert _session.resolve_target("auto").name == "xpu"
    _pretend_accelerator(monkeypatch, "mps")
    assert _session.resolve_target("auto").name == "mps"
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: False)  # built for it, none present
    assert _session.resolve_target("auto").name == "cpu"


def test_run_auto_on_a_cuda_machine_says_so(tmp_path: Path) -> None:
    # a child python where torch reports CUDA: `torchport run` (target auto) leaves CUDA alone and says so
    script = tmp_path / "s.py"
    script.write_text("import torch\nprint(torch.zeros.__module__, torch.cuda.is_available.__module__)\n")
    code = (
        "import sys, torch\n"
        "torch.accelerator.is_available = lambda: True\n"
        "torch.accelerator.current_accelerator = lambda check_available=False: torch.device('cuda')\n"
        "from torchport.runtime.cli import main\n"
        f"sys.exit(main(['--target', 'auto', '--log', {str(tmp_path / 'a.log')!r}, {str(script)!r}]))\n"
    )
    done = run_python(["-c", code])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["torch", "torch.cuda"]  # torch's own functions, not ours
    assert "target auto: CUDA is present" in done.stderr
    assert "nothing is redirected" in (tmp_path / "a.log").read_text()


def test_torch_without_get_device_module_is_refused_naming_the_oldest_supported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # torch 2.1 (PyPI's 2.1.2, tried): no torch.get_device_module; the runtime says which torch it needs
    monkeypatch.delattr(torch, "get_device_module")
    with pytest.raises(_session.TargetUnavailable, match=r"needs torch 2\.4 or later .* this is torch "):
        _session.device_module(TARGETS["cpu"])
