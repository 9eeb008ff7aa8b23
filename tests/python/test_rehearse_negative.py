"""What a user is caught out by on the real device, caught under rehearsal: refused float64 on npu, an
operator missing from the target's lists (reported with its call site; an error with --strict or on a
target without CPU fallback), memory beyond --memory; plus the command's own errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rehearse_testlib import read_report, rehearsal_built, rehearse  # noqa: F401

FIX = Path(__file__).resolve().parent / "fixtures" / "rehearse"


def test_float64_is_refused_on_npu_with_the_device_error_and_call_site(
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    rep = tmp_path / "r.json"
    p = rehearse("--target", "npu", "--report", str(rep), str(FIX / "float64_npu.py"))
    assert p.returncode == 1
    assert "float32 ok 4.0" in p.stdout
    assert "Unsupport data type: at::ScalarType::Double" in p.stderr
    [v] = read_report(rep)["dtype_violations"]
    assert v["dtype"] == "Double"
    assert v["site"].endswith("float64_npu.py:9"), v


def test_float64_is_fine_on_mlu(rehearsal_built: None, tmp_path: Path) -> None:  # noqa: F811
    script = tmp_path / "f64.py"
    script.write_text(
        "import torch\nx = torch.ones(3, dtype=torch.float64, device='mlu')\nprint((x * 2).sum().item())\n"
    )
    p = rehearse("--target", "mlu", str(script))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "6.0"


def test_unlisted_op_on_npu_warns_once_in_the_vendor_words_and_is_counted_at_its_call_site(
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    rep = tmp_path / "r.json"
    p = rehearse("--target", "npu", "--report", str(rep), str(FIX / "unlisted_op.py"), "npu")
    assert p.returncode == 0, p.stderr
    assert "mode 2.0 2 2.0" in p.stdout
    warning = (
        "CAUTION: The operator 'aten::mode' is not currently supported on the NPU backend and will fall back "
        "to run on the CPU. This may have performance implications."
    )
    assert p.stderr.count(warning) == 1, p.stderr
    report = read_report(rep)
    [row] = [r for r in report["ops"]["fallback"] if r["op"] == "aten::mode"]
    assert row["calls"] == 2
    sites = {s["site"].rsplit("/", 1)[-1]: s["calls"] for s in row["sites"]}
    assert sites == {"unlisted_op.py:9": 1, "unlisted_op.py:10": 1}
    assert "fallen back: aten::mode x2 at" in p.stderr


def test_unlisted_op_raises_with_strict_like_the_vendor_switch(rehearsal_built: None) -> None:  # noqa: F811
    p = rehearse("--target", "npu", "--strict", str(FIX / "unlisted_op.py"), "npu")
    assert p.returncode == 1
    assert (
        "NotImplementedError: The operator 'aten::mode' is not currently supported on the NPU backend"
        in p.stderr
    )
    assert "TORCH_NPU_FALLBACK_CPU_DISABLE=1" in p.stderr
    assert 'unlisted_op.py", line 9' in p.stderr  # the traceback points at the user's line


def test_the_vendor_switch_itself_means_strict(rehearsal_built: None) -> None:  # noqa: F811
    p = rehearse(
        "--target", "mlu", str(FIX / "unlisted_op.py"), "mlu", extra_env={"ENABLE_FALLBACK_TO_CPU": "0"}
    )
    assert p.returncode == 1
    assert "ENABLE_FALLBACK_TO_CPU=0" in p.stderr


def test_unlisted_op_on_mlu_falls_back_to_the_cpu(rehearsal_built: None, tmp_path: Path) -> None:  # noqa: F811
    rep = tmp_path / "r.json"
    p = rehearse("--target", "mlu", "--report", str(rep), str(FIX / "unlisted_op.py"), "mlu")
    assert p.returncode == 0, p.stderr
    assert "mode 2.0 2 2.0" in p.stdout
    assert [r["calls"] for r in read_report(rep)["ops"]["fallback"] if r["op"] == "aten::mode"] == [2]


def test_memory_beyond_capacity_raises_oom_and_nothing_leaks(rehearsal_built: None, tmp_path: Path) -> None:  # noqa: F811
    rep = tmp_path / "r.json"
    p = rehearse("--target", "npu", "--memory", "4MiB", "--report", str(rep), str(FIX / "oom.py"))
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert (
        "OOM after 4 MiB: NPU out of memory. Tried to allocate 1.00 MiB (NPU 0; 4.00 MiB total capacity;"
        in out
    )
    assert "allocated while full 4194304" in out
    assert "allocated after del 0" in out
    assert "reserved after empty_cache 0" in out
    assert "after: 3 MiB fits again 3145728" in out
    [m] = read_report(rep)["memory"]
    assert m["peak_allocated_bytes"] == 4 * 2**20
    assert m["ooms"] == 1
    assert m["allocated_bytes_at_exit"] == 0  # the script's tensors were freed with its namespace


def test_devices_option(rehearsal_built: None) -> None:  # noqa: F811
    p = rehearse("--target", "npu", "--devices", "2", str(FIX / "devices.py"))
    assert p.returncode == 0, p.stderr
    assert "count 2 2" in p.stdout
    assert "sum 16777216.0 npu:1" in p.stdout
    assert "dev0 0 dev1 True" in p.stdout
    assert "current 1" in p.stdout
    assert "no npu:2: Invalid device ordinal 2" in p.stdout


def test_import_torch_npu_outside_rehearsal_is_an_ordinary_import_error() -> None:
    code = (
        "import torchport.rehearse.runtime, torchport.rehearse.cli\n"
        "try:\n    import torch_npu\nexcept ModuleNotFoundError as e:\n    print('ImportError:', e)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "ImportError: No module named 'torch_npu'"


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    p = rehearse("--target", "cuda", "x.py")
    assert (p.returncode, p.stderr.strip()) == (
        2,
        "torchport rehearse: error: unknown target 'cuda'; choose one of: npu, mlu, musa",
    )
    p = rehearse("--target", "npu", str(tmp_path / "missing.py"))
    assert (p.returncode, p.stderr.strip()) == (
        2,
        f"torchport rehearse: error: {tmp_path / 'missing.py'}: no such file",
    )
    p = rehearse("--target", "npu", "--memory", "lots", str(FIX / "oom.py"))
    assert p.returncode == 2
    assert p.stderr.startswith("torchport rehearse: error: --memory: not a size: 'lots'")


def test_a_missing_compiler_names_the_package(tmp_path: Path) -> None:
    p = rehearse(
        "--target",
        "npu",
        str(FIX / "oom.py"),
        extra_env={
            "CXX": "no-such-compiler-xyz",
            "TORCHPORT_CACHE": str(tmp_path / "cache"),
            "TORCHPORT_REHEARSE_BUILD_DIR": "",
        },
    )
    assert p.returncode == 2
    assert p.stderr.strip() == (
        "torchport rehearse: error: no C++ compiler ('no-such-compiler-xyz') to build the rehearsal device: "
        "install the Debian package g++ (apt-get install -y g++)"
    )


def test_dash_m_runs_a_module_with_its_arguments(rehearsal_built: None, tmp_path: Path) -> None:  # noqa: F811
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text(
        "import sys\nimport torch\nimport torch_mlu\n"
        "x = torch.ones(2, 2).mlu()\nprint(sys.argv[1:], (x @ x).sum().item(), torch.mlu.is_available())\n"
    )
    p = rehearse("--target", "mlu", "-m", "proj.train", "--lr", "3", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "['--lr', '3'] 8.0 True"
