"""`torchport rehearse --target npu` with the vendor's own torch_npu (issue 31 §2): its Python layer runs on
the rehearsal device, its compiled core replaced by torchport.rehearse.npu_core, whose surface
(data/vendor/torch_npu_core.json) is generated from the wheel's source and checked here.

The tests that run the vendor's package need the pinned 2.13.0 wheel in build/torch_npu_wheels/ (CI downloads
it with tools/check_vendor_npu.py and installs it in build/vendor-torch-npu with tools/gen_vendor_npu_core.py
--install); without it they are skipped, saying so. The table's own tests need no wheel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rehearse_testlib import (  # noqa: F401
    NO_VENDOR_WHEEL,
    REPO,
    VENDOR_DIR,
    VENDOR_PIN,
    VENDOR_WHEEL,
    env,
    free_port,
    install_vendor,
    losses,
    rehearsal_built,
    rehearse,
)
from torchrun_testlib import run_ranks

pytest.importorskip("torch")

from torchport.rehearse import npu_core, vendor_npu  # noqa: E402

PIN = VENDOR_PIN
WHEEL = VENDOR_WHEEL
VENDOR = VENDOR_DIR
TABLE = json.loads((REPO / "data" / npu_core.TABLE).read_text())
SCRIPTS = REPO / "tests/fixtures/e2e_scripts"
NO_WHEEL = NO_VENDOR_WHEEL


@pytest.fixture(scope="module")
def vendor() -> Path:
    """The vendor's torch_npu, installed for the rehearsal only (tools/gen_vendor_npu_core.py --install)."""
    return install_vendor()


# ---- the table, against npu_core and against the wheel ----


def test_the_table_says_exactly_what_npu_core_serves() -> None:
    served = npu_core.served()
    names = TABLE["names"]
    wrong = {n: r["status"] for n, r in names.items() if (r["status"] == "served") != (n in served)}
    assert not wrong, f"data/vendor/torch_npu_core.json is stale (tools/gen_vendor_npu_core.py): {wrong}"
    assert set(TABLE["served_beyond_the_wheel"]) == set(served) - set(names)
    assert TABLE["served"] == sum(r["status"] == "served" for r in names.values()) >= 50
    assert TABLE["refused"] == len(names) - TABLE["served"]


def test_the_table_holds_the_names_the_wheels_python_uses() -> None:
    if not WHEEL.is_file():
        pytest.skip(NO_WHEEL)
    p = subprocess.run(
        [sys.executable, str(REPO / "tools/gen_vendor_npu_core.py"), "--offline", "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr


def test_every_refused_name_raises_naming_itself_and_unknown_names_do_not_exist() -> None:
    core = npu_core.make_core()
    refused = [n for n, r in TABLE["names"].items() if r["status"] == "refused" and n.count(".") == 2]
    assert len(refused) > 100
    for dotted in refused:
        obj = getattr(core, dotted.rsplit(".", 1)[1])
        with pytest.raises(NotImplementedError, match=f"^not available in rehearsal: {dotted} "):
            obj(0)
    # the vendor subclasses refused classes at import (class NPUGraph(torch_npu._C._NPUGraph));
    # their instances refuse
    graph = type("NPUGraph", (core._NPUGraph,), {})
    with pytest.raises(NotImplementedError, match="torch_npu._C._NPUGraph"):
        graph()
    with pytest.raises(AttributeError):
        core._npu_no_such_function  # noqa: B018
    # a child exists once its init function made it, as module_loader checks with hasattr
    assert not hasattr(core, "_profiler")
    core._profiler_init()
    assert core._profiler.ProfilerActivity.NPU.name == "NPU"
    with pytest.raises(NotImplementedError, match="torch_npu._C._profiler._start_profiler"):
        core._profiler._start_profiler()


def test_custom_schemas_are_read_from_the_custom_section_only() -> None:
    text = (
        "official:\n- func: add.Tensor(Tensor self, Tensor other) -> Tensor\n"
        "custom:\n- func: npu_rms_norm(Tensor self, Tensor gamma, float epsilon=1e-06) -> (Tensor, Tensor)\n"
        "  op_api: True\n- func: 'npu_swiglu(Tensor self, int dim=-1) -> Tensor'\n"
        "symint:\n- func: zeros\n"
    )
    assert vendor_npu.custom_schemas(text) == [
        "npu_rms_norm(Tensor self, Tensor gamma, float epsilon=1e-06) -> (Tensor, Tensor)",
        "npu_swiglu(Tensor self, int dim=-1) -> Tensor",
    ]


def test_locate_chooses_the_package_or_says_why_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(vendor_npu.ENV, raising=False)
    assert vendor_npu.locate("off") is None
    assert vendor_npu.locate("auto") is None  # no torch_npu on this sys.path
    with pytest.raises(vendor_npu.VendorError, match="no such directory"):
        vendor_npu.locate(str(tmp_path / "missing"))
    with pytest.raises(vendor_npu.VendorError, match="no torch_npu package in"):
        vendor_npu.locate(str(tmp_path))
    pkg = tmp_path / "torch_npu"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    with pytest.raises(vendor_npu.VendorError, match="is not the vendor's torch_npu"):
        vendor_npu.locate(str(tmp_path))
    (pkg / "_init/core").mkdir(parents=True)
    (pkg / vendor_npu.MARKER).write_text("")
    (pkg / "version.py").write_text("__version__ = '2.13.0'\n")
    for choice in (str(tmp_path), str(pkg)):
        found = vendor_npu.locate(choice)
        assert found is not None and found.root == tmp_path.resolve() and found.version == "2.13.0"
    monkeypatch.setenv(vendor_npu.ENV, str(tmp_path))
    assert vendor_npu.locate(None) == found
    monkeypatch.syspath_prepend(str(tmp_path))
    assert vendor_npu.locate("auto") == found


# ---- runs ----

PROBE = r"""
import json, os, warnings
import torch, torch_npu
facts = {"file": torch_npu.__file__, "version": torch_npu.__version__}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    facts["capability"] = torch_npu.npu.get_device_capability()
    torch_npu.npu.matmul.allow_tf32 = True
    facts["allow_tf32"] = torch_npu.npu.matmul.allow_tf32
    facts["allow_hf32"] = torch_npu.npu.matmul.allow_hf32
facts["warnings"] = [str(w.message) for w in caught]
facts["devices"] = torch_npu.npu.device_count()
x = torch.arange(6.0, device="npu").reshape(2, 3)
facts["sum"] = x.sum().item()
facts["device"] = str(x.device)
facts["allocated"] = torch_npu.npu.memory_allocated()
facts["generators"] = len(torch_npu.npu.default_generators)
torch_npu.npu.set_device(1)
facts["current"] = torch_npu.npu.current_device()
s = torch_npu.npu.Stream()
with torch_npu.npu.stream(s):
    facts["stream"] = torch_npu.npu.current_stream() == s
try:
    torch_npu.npu.utilization()
except NotImplementedError as e:
    facts["utilization"] = str(e)
print("FACTS " + json.dumps(facts))
"""


def _facts(stdout: str) -> dict[str, object]:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("FACTS "))
    return dict(json.loads(line[len("FACTS ") :]))


def test_the_vendors_torch_npu_runs_on_the_rehearsal_device(
    vendor: Path,
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    p = rehearse(
        "--target", "npu", "--devices", "2", "--vendor-torch-npu", str(vendor), str(probe), timeout=600
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert (
        f"torchport rehearse: torch_npu: the vendor's torch_npu {PIN['version']} from {vendor}/torch_npu"
        in (p.stderr)
    )
    facts = _facts(p.stdout)
    assert facts["file"] == f"{vendor}/torch_npu/__init__.py" and facts["version"] == PIN["version"]
    # the vendor's own code: None without TORCH_NPU_DEVICE_CAPABILITY (with its warning)
    assert facts["capability"] is None
    assert any("TORCH_NPU_DEVICE_CAPABILITY" in w for w in facts["warnings"])  # type: ignore[union-attr]
    # matmul.allow_tf32 is dropped without a word, as the vendor's _allowHF32Matmul does
    assert facts["allow_tf32"] is None and facts["allow_hf32"] is False
    assert not any("allow_tf32" in w for w in facts["warnings"])  # type: ignore[union-attr]
    assert facts["devices"] == 2 and facts["generators"] == 2 and facts["current"] == 1
    assert facts["sum"] == 15.0 and facts["device"] == "npu:0" and facts["stream"] is True
    assert int(facts["allocated"]) > 0  # type: ignore[call-overload]
    assert str(facts["utilization"]).startswith(
        "not available in rehearsal: torch_npu._C._npu_getDeviceUtilizationRate"
    )


def test_auto_finds_the_vendors_package_on_the_path_before_torchs_autoload_does(
    vendor: Path,
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    """On sys.path the wheel's dist-info is there too, whose `torch.backends` entry point torch would load
    at `import torch` (and fail on the compiled core): the rehearsal turns the autoload off first."""
    probe = tmp_path / "auto.py"
    probe.write_text("import torch_npu\nprint('FILE', torch_npu.__file__)\n")
    p = rehearse(
        "--target", "npu", str(probe),
        extra_env={"PYTHONPATH": os.pathsep.join([str(REPO / "python"), str(vendor)])}, timeout=600,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"FILE {vendor}/torch_npu/__init__.py" in p.stdout
    assert "torchport rehearse: torch_npu: the vendor's torch_npu" in p.stderr


AFFINITY = r"""
import os
import torch, torch_npu
from torch.utils.data import DataLoader
before = os.sched_getaffinity(0)
print("BATCHES", [b.tolist() for b in DataLoader(list(range(4)), batch_size=2, num_workers=1)])
print("KEPT", os.sched_getaffinity(0) == before)
core = min(before)
torch_npu.utils.set_thread_affinity([core, core])
print("BOUND", sorted(os.sched_getaffinity(0)) == [core])
torch_npu.utils.reset_thread_affinity()
print("RESET", os.sched_getaffinity(0) == before)
print("RANGE", torch_npu.npu.mstx.range_start("step"))
"""


def test_dataloader_workers_thread_affinity_and_mstx_ranges(
    vendor: Path,
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The vendor's DataLoader patch sets the default thread affinity around starting the workers, and its
    mstx patch opens a range around every batch: both served (hifi-gan's validation loader failed at the
    first, every batch logged an [ERROR] at the second)."""
    probe = tmp_path / "affinity.py"
    probe.write_text(AFFINITY)
    p = rehearse("--target", "npu", "--vendor-torch-npu", str(vendor), str(probe), timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "BATCHES [[0, 1], [2, 3]]" in p.stdout
    for line in ("KEPT True", "BOUND True", "RESET True", "RANGE 0"):
        assert line in p.stdout, p.stdout
    assert "[ERROR]" not in p.stdout + p.stderr


def test_the_capability_variable_is_the_vendors(vendor: Path, rehearsal_built: None, tmp_path: Path) -> None:  # noqa: F811
    probe = tmp_path / "cap.py"
    probe.write_text("import torch_npu\nprint('CAP', torch_npu.npu.get_device_capability())\n")
    p = rehearse(
        "--target", "npu", "--vendor-torch-npu", str(vendor), str(probe),
        extra_env={"TORCH_NPU_DEVICE_CAPABILITY": "8.0"}, timeout=600,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    assert "CAP (8, 0)" in p.stdout


def test_without_the_vendors_package_the_stand_in_is_used_and_said(
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    probe = tmp_path / "which.py"
    probe.write_text("import torch_npu\nprint('FILE', torch_npu.__file__)\n")
    p = rehearse("--target", "npu", "--vendor-torch-npu", "off", str(probe))
    assert p.returncode == 0, p.stderr[-3000:]
    assert "torchport rehearse: torch_npu: torchport's stand-in" in p.stderr
    assert "/torchport/rehearse/standins/torch_npu/__init__.py" in p.stdout


def test_a_wrong_path_is_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text("")
    p = rehearse("--target", "npu", "--vendor-torch-npu", str(tmp_path), str(tmp_path / "x.py"))
    assert p.returncode == 2
    assert p.stderr.strip() == (
        f"torchport rehearse: error: --vendor-torch-npu {tmp_path}: no torch_npu package in {tmp_path}"
    )


def _migrate(src: Path, out: Path, target: str = "npu") -> Path:
    p = subprocess.run(
        [sys.executable, "-m", "torchport", "migrate", str(src), "-o", str(out), "--target", target, "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return out / f"{src.name}_{target}"


def test_the_migrated_example_project_trains_with_the_stand_ins_losses(
    vendor: Path,
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    proj = _migrate(REPO / "examples/cuda_project", tmp_path)
    runs = {}
    for which in (str(vendor), "off"):
        ckpt = tmp_path / f"ckpt-{which != 'off'}.pt"
        p = rehearse(
            "--target", "npu", "--vendor-torch-npu", which, "train.py", "--steps", "3", "--out", str(ckpt),
            cwd=proj, timeout=600,
        )  # fmt: skip
        assert p.returncode == 0, p.stderr[-3000:]
        assert f"checkpoint reloaded from {ckpt}" in p.stdout  # torch.save through the vendor's serialization
        runs[which] = losses(p.stdout)
    assert len(runs["off"]) == 3 and runs[str(vendor)] == runs["off"]


@pytest.mark.parametrize("script", ["argparse_device", "cnn_amp", "streams_events"])
def test_migrated_e2e_scripts_give_the_stand_ins_losses(
    script: str,
    vendor: Path,
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    src = tmp_path / "e2e_scripts"
    src.mkdir()
    shutil.copy(SCRIPTS / f"{script}.py", src)
    out = _migrate(src, tmp_path / "out")
    runs = {}
    for which in (str(vendor), "off"):
        p = rehearse("--target", "npu", "--vendor-torch-npu", which, f"{script}.py", cwd=out, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        runs[which] = losses(p.stdout)
    assert len(runs["off"]) == 3 and runs[str(vendor)] == runs["off"]


def test_ddp_train_spawns_two_ranks_on_the_vendors_hccl(
    vendor: Path,
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    """ddp_train starts its 2 ranks itself (torch.multiprocessing.spawn); the vendor's `hccl` registration
    makes the rehearsal's gloo-backed group. 2 of 10 such runs used to hang after the last step, in gloo's
    teardown (docs/rehearse.md, "Two ranks: the teardown deadlock"): a hang fails here by the timeout."""
    src = tmp_path / "e2e_scripts"
    src.mkdir()
    shutil.copy(SCRIPTS / "ddp_train.py", src)
    out = _migrate(src, tmp_path / "out")
    runs = {}
    for which in (str(vendor), "off"):
        args = ["--target", "npu", "--devices", "2", "--vendor-torch-npu", which, "ddp_train.py"]
        p = rehearse(*args, cwd=out, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        runs[which] = losses(p.stdout)
    assert len(runs["off"]) == 3 and runs[str(vendor)] == runs["off"]


def _torchrun(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        f"--master_port={free_port()}",
    ]
    return run_ranks(
        [*cmd, *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=300, env=env()
    )


def test_torchrun_two_ranks_on_the_vendors_package_give_the_cpu_migrations_losses(
    vendor: Path,
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    """`torchrun --no-python torchport rehearse --target npu --vendor-torch-npu DIR train.py`: one rehearsal
    per rank, each importing the vendor's package; its losses are the cpu migration's on plain torchrun."""
    src = tmp_path / "proj"
    src.mkdir()
    shutil.copy(REPO / "tests/python/fixtures/rehearse/ddp_torchrun.py", src / "train.py")
    cpu = _migrate(src, tmp_path / "out", "cpu")
    dev = _migrate(src, tmp_path / "out")
    ref = _torchrun("train.py", cwd=cpu)
    assert ref.returncode == 0, ref.stderr[-3000:]
    cmd = ["--no-python", sys.executable, "-m", "torchport", "rehearse", "--target", "npu"]
    cmd += ["--vendor-torch-npu", str(vendor)]
    p = _torchrun(*cmd, "train.py", cwd=dev)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stderr.count("torchport rehearse: torch_npu: the vendor's torch_npu") == 2  # one line per rank
    got = losses(p.stdout)
    assert len(got) == 3 and got == losses(ref.stdout)
