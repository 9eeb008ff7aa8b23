"""One knowledge base: every per-target fact that both halves use is read from data/, and the C++ core
(`torchport targets --format json`, `torchport explain VAR --format json`) and the Python half
(torchport.targets, the runtime's emulations, check-ops' opdb) must say the same thing about it."""

from __future__ import annotations

import json
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from torchport import targets as T
from torchport._core import core_binary

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data"


def core(*args: str) -> str:
    p = subprocess.run([core_binary(), *args], capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stderr
    return p.stdout


@lru_cache(maxsize=1)
def raw_targets() -> dict[str, dict[str, Any]]:
    """data/targets.json as written (facts the core's `targets` listing does not print)."""
    data = json.loads(
        (Path(__file__).resolve().parents[2] / "data" / "targets.json").read_text(encoding="utf-8")
    )
    return {t["name"]: t for t in data["targets"]}


def cpp_targets() -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in json.loads(core("targets", "--format", "json"))}


def test_both_halves_know_the_same_targets() -> None:
    cpp = cpp_targets()
    # The runtime needs a device string: the device-agnostic target is `--target auto` there.
    assert set(T.TARGETS) == {n for n, t in cpp.items() if t["device"]}
    assert T.TARGET_NAMES == (*T.TARGETS, "auto")


@pytest.mark.parametrize("name", sorted(T.TARGETS))
def test_every_shared_fact_agrees(name: str) -> None:
    c, p = cpp_targets()[name], T.TARGETS[name]
    pairs = {
        "device": (c["device"], p.device_type),
        "module": (c["module"], p.device_module),
        "package": (c["package"] or None, p.vendor_package),
        "import": (c["import"], p.import_stmt),
        "requirement": (c["requirement"], p.requirement),
        "install": (c["install"], p.install_hint),
        "title": (c["title"], p.title),
        "backend": (c["backend"], p.backend),
        "visible_devices": ((c["visible_devices"],) if c["visible_devices"] else (), p.visible_devices_env),
        "amp_device": (c["amp_device"], p.amp_device_type),
        "amp_dtype": (c["amp_dtype"], p.amp_dtype),
        "no_dtypes": (tuple(c["no_dtypes"]), p.no_dtypes),
        "float64": ("float64" not in c["no_dtypes"], p.float64),
        "device_index": (c["device_index"], p.has_device_index),
        "host": (c["host"], p.host),
        "profiler_activity": (c["profiler_activity"] or None, p.profiler_activity),
        "fallback.default": (c["fallback"]["default"], p.fallback_default),
        "fallback.env": (c["fallback"]["env"].split("=")[0] or None, p.fallback_env),
        "fallback.env value": (c["fallback"]["env"].partition("=")[2], p.fallback_env_value),
        "unverified": (tuple(sorted(c["unverified"])), tuple(sorted(p.unverified))),
    }
    wrong = {k: v for k, v in pairs.items() if v[0] != v[1]}
    assert wrong == {}, f"C++ and Python disagree on {name}: {wrong}"


@pytest.mark.parametrize("name", sorted(T.TARGETS))
def test_every_fact_names_its_source(name: str) -> None:
    c = cpp_targets()[name]
    needed = {"device", "module", "package", "install", "requirement", "backend", "visible_devices"}
    needed |= {"amp_device", "amp_dtype", "no_dtypes", "device_index", "fallback", "profiler_activity"}
    assert needed <= set(c["facts"]), needed - set(c["facts"])
    for fact, source in c["facts"].items():
        # A source is upstream data, a vendor document summarised in shared/reference, the installed torch,
        # the vendor's torch-npu wheels (tools/check_vendor_npu.py),
        # or it says it is unverified. Never our own code. "none:" states an absence (no document names the
        # fact, so the value is empty and the feature that needs it is refused), never a value.
        if source.startswith("none:"):
            value = raw_targets()[name].get(fact, c.get(fact))
            assert value in ("", None, [], False), f"{name}.{fact}: a value ({value!r}) with a 'none:' source"
            continue
        assert source.startswith("unverified:") or any(
            s in source
            for s in ("shared/upstream/", "shared/reference/", "installed torch", "torch-npu wheels")
        ), f"{name}.{fact}: {source}"
        assert "targets.py" not in source and "python/torchport" not in source, f"{name}.{fact}: {source}"
    assert T.TARGETS[name].sources["backend"] == c["facts"]["backend"]


def test_unverified_facts_are_shown_by_torchport_targets() -> None:
    text = core("targets")
    blocks = {b.split()[0]: b for b in text.strip().split("\n\n")}
    for name, t in cpp_targets().items():
        if t["unverified"]:
            assert f"unverified:      {', '.join(t['unverified'])}" in blocks[name], blocks[name]
        else:
            assert "unverified:" not in blocks[name]
    # ASCEND_RT_VISIBLE_DEVICES was the GUIDE's word only, until the vendor's wheels were read (issue 31)
    assert "visible_devices" not in cpp_targets()["npu"]["unverified"]


def _env_entries() -> list[dict[str, Any]]:
    return json.loads((DATA / "catalogue" / "environment.json").read_text())["entries"]


@pytest.mark.parametrize("api", [e["api"] for e in _env_entries()])
def test_environment_renames_agree(api: str) -> None:
    """The runtime renames a CUDA variable exactly where `migrate` does (TP500), to the same name."""
    cpp = json.loads(core("explain", api, "--format", "json"))["targets"]
    for name, t in T.TARGETS.items():
        repl = cpp.get(name, {}).get("replacement", "")
        if api.endswith("*"):
            got = t.env_prefix_map.get(api[:-1])
            want = repl[:-1] if repl.endswith("*") else None
        else:
            got = t.env_map.get(api)
            want = repl or None
        assert got == want, f"{api} on {name}: runtime {got!r}, migrate {want!r}"
        # An inexact rename (partial, unknown) is logged as modified at run time, with its note.
        inexact = bool(repl) and cpp[name]["status"] != "supported"
        assert (api in t.env_notes) == inexact, f"{api} on {name}"


def test_the_disagreements_of_issue_11_are_resolved() -> None:
    npu, mlu, mps = T.TARGETS["npu"], T.TARGETS["mlu"], T.TARGETS["mps"]
    # PYTORCH_CUDA_ALLOC_CONF: the NPU allocator reads PYTORCH_NPU_ALLOC_CONF (reference 1.1), both halves
    assert npu.env_map["PYTORCH_CUDA_ALLOC_CONF"] == "PYTORCH_NPU_ALLOC_CONF"
    # NCCL_*: renamed by prefix on mlu only, and marked unverified there
    assert mlu.env_prefix_map == {"NCCL_": "CNCL_", "TORCH_NCCL_": "TORCH_CNCL_"}
    assert npu.env_prefix_map == {} and "NCCL_DEBUG" not in npu.env_map
    # mps: torch's default_device_backend_map["mps"] is gloo
    assert mps.backend == cpp_targets()["mps"]["backend"] == "gloo"


# What a call evaluates to without a device: the catalogue's without_device (what `migrate --target cpu`
# writes) against what `torchport run --target cpu` returns for the same call.
# Not compared (issue 33): mem_get_info, which `torchport run` answers with the host memory it measures (a
# constant in the source cannot be that), and memory_stats, whose run-time dict has every key torch's CUDA
# allocator reports (each 0) where migrate writes {}. Both are logged at run time; migrate's constants are
# issue 33's follow-up on the migrate side.
EMULATED = ["memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
            "empty_cache", "reset_peak_memory_stats", "is_bf16_supported",
            "get_device_capability", "current_device", "get_arch_list", "utilization",
            "ipc_collect", "set_per_process_memory_fraction"]  # fmt: skip
ARGS = {"set_per_process_memory_fraction": (0.5,)}


def test_emulations_without_a_device_agree() -> None:
    torch = pytest.importorskip("torch")
    from runtime_testlib import enabled

    static = {}
    for name in EMULATED:
        m = json.loads(core("explain", f"torch.cuda.{name}", "--format", "json"))["targets"]["cpu"]
        assert m["without_device"], f"torch.cuda.{name} on cpu: migrate leaves a call that crashes"
        static[name] = eval(m["without_device"])  # noqa: S307 - a Python literal from our own data
    with enabled("cpu"):
        runtime = {name: getattr(torch.cuda, name)(*ARGS.get(name, ())) for name in EMULATED}
    assert runtime == static


def test_check_ops_fallback_is_the_targets_fallback() -> None:
    for path in sorted((DATA / "opdb").glob("*.json")):
        if path.stem == "aten":
            continue
        db = json.loads(path.read_text())
        fb = cpp_targets()[db["target"]]["fallback"]
        assert db["fallback"] == fb, path.name
        assert T.TARGETS[db["target"]].fallback_default == fb["default"]


def test_facts_sourced_to_the_installed_torch_hold() -> None:
    """The facts whose source is the installed torch are checked against it, not copied."""
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    for name, t in T.TARGETS.items():
        facts = cpp_targets()[name]["facts"]
        if facts["amp_dtype"].startswith("installed torch"):
            # Out-of-tree devices are PrivateUse1 until their package renames it.
            key = t.amp_device_type if t.in_tree or t.device_type == "hpu" else "privateuseone"
            assert str(torch.get_autocast_dtype(key)) == f"torch.{t.amp_dtype}", name
        if facts["backend"].startswith("installed torch"):
            assert dist.Backend.default_device_backend_map[t.device_type] == t.backend, name
        if facts["module"].startswith("installed torch"):
            assert torch.get_device_module(t.device_type).__name__ == t.device_module, name
        if t.profiler_activity and "installed torch" in facts["profiler_activity"]:
            assert hasattr(torch.profiler.ProfilerActivity, t.profiler_activity), name
