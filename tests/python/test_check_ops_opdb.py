"""The per-target op databases: fresh against the upstream lists, and facts read from those lists by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools_testlib import load_tool
from torchport.check_ops.opdb import DB_TARGETS, OpDbError, db_dir, load
from torchport.targets import get_target

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = REPO.parent / "shared" / "upstream"


def _gen_module():
    return load_tool("gen_opdb")


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream is not next to the repository")
def test_committed_databases_are_fresh():
    gen = _gen_module()
    files = gen.generate(UPSTREAM)
    assert sorted(files) == sorted([f"{t}.json" for t in DB_TARGETS] + ["aten.json"])
    diff = gen.stale_diff(files, REPO / "data" / "opdb")
    assert diff == "", "data/opdb is stale; run python tools/gen_opdb.py\n" + diff[:4000]


def test_installed_databases_match_the_source_tree():
    # The wheel ships data/opdb (CMakeLists.txt install(DIRECTORY ...)); the loader finds it.
    d = db_dir()
    for t in DB_TARGETS:
        assert (d / f"{t}.json").read_text() == (REPO / "data" / "opdb" / f"{t}.json").read_text()


@pytest.mark.parametrize("target", DB_TARGETS)
def test_every_database_records_source_commit_and_torch_version(target):
    doc = json.loads((REPO / "data" / "opdb" / f"{target}.json").read_text())
    assert doc["generated_with_torch"].startswith("2.13")
    assert doc["torch_versions"], target
    for src in doc["sources"]:
        assert src["file"] and src["repository"]
    vendor = [s for s in doc["sources"] if not s["file"].startswith("torchgen/")]
    # commits from ../shared/upstream/PROVENANCE.md
    commits = {
        "npu": {"517f2e7d0f202f38b76310706cb977ca2388ad21", "9e73e708ab9350d203475609f36f8a43f6a0c2ab"},
        "mlu": {"9e95f972d3bfda0a855f9500aec852664ceecb6a"},
        "musa": {"8b583b3f2fd0d9d3d9e74b9ec588a25d8bed1a30"},
        "mps": set(),
        "xpu": {"ab84f925a234f33ee70a29af59c03aefdeff68c3"},
    }[target]
    assert {s["commit"] for s in vendor} == commits


# --- facts read by hand from ../shared/upstream ---------------------------------------------------------


def test_npu_version_gate_op_api_from_v2_7():
    # op_plugin_functions.yaml: bitwise_right_shift.Tensor_out has only `op_api: [v2.7, newest]`.
    assert not load("npu", "2.6").is_native("bitwise_right_shift.Tensor_out")
    assert load("npu", "2.7").is_native("bitwise_right_shift.Tensor_out")
    assert load("npu", "2.15").is_native("bitwise_right_shift.Tensor_out")


def test_npu_version_gate_closed_interval_to_v2_12():
    # op_plugin_functions.yaml: kthvalue.dimname has `acl_op: [v2.1, v2.12]` and `op_api: [v2.1, v2.12]`.
    assert load("npu", "2.12").is_native("kthvalue.dimname")
    assert not load("npu", "2.13").is_native("kthvalue.dimname")
    # ... while kthvalue itself is `all_version`.
    assert load("npu", "2.13").is_native("kthvalue")


def test_npu_native_functions_yaml_ops_hold_for_every_version():
    # npu_native_functions.yaml `supported:` lists _local_scalar_dense and `func: copy_`.
    for v in ("2.1", "2.13"):
        db = load("npu", v)
        assert db.is_native("_local_scalar_dense") and db.is_native("copy_")


def test_npu_lists_composites_that_vendors_implement():
    # op_plugin_functions.yaml lists matmul, lstm.input and scaled_dot_product_attention (CIA upstream).
    db = load("npu", "2.13")
    for op in ("matmul", "lstm.input", "scaled_dot_product_attention"):
        assert db.is_native(op), op
    assert not db.is_native("lgamma") and not db.is_native("lgamma.out")


def test_mlu_facts():
    # mlu_functions.yaml (aten:): group_norm and lstm.input are listed, lgamma is not.
    db = load("mlu", "2.13")
    assert db.torch_version == "2.4" and not db.exact_version
    assert db.is_native("group_norm") and db.is_native("lstm.input")
    assert not db.is_native("lgamma") and not db.is_native("digamma")
    assert db.fallback_default == "cpu"


def test_musa_facts():
    # musa_functions.yaml: `- func: lgamma` and `- func: lgamma.out` are listed; `upsample_nearest2d`
    # only for QuantizedPrivateUse1, so it is not a dense kernel of its own.
    db = load("musa", "2.7")
    assert db.is_native("lgamma") and db.is_native("lgamma.out")
    assert not db.is_native("upsample_nearest2d")
    assert db.delegate_of("upsample_nearest2d") == "upsample_nearest2d.out"
    assert db.fallback_default == "error"


def test_xpu_fallback_list_and_partial_world():
    # xpu_fallback_ops.txt lists linalg_eig and triangular_solve.X; its `name` and `torchvision` lines are
    # not operators and must not reach the database.
    db = load("xpu", "2.13")
    assert {"linalg_eig", "triangular_solve.X"} <= db.always_fallback
    assert "name" not in db.always_fallback and "torchvision" not in db.always_fallback
    # torch 2.13's native_functions.yaml has an XPU key for mm.out but not for add.out: the list is partial.
    assert db.is_native("mm.out") and not db.is_native("add.out")
    assert not db.closed_world


def test_mps_keys_and_structured_delegates():
    # native_functions.yaml: `lgamma.out` has `CPU, CUDA, MPS: lgamma_out`, `lgamma` delegates to it;
    # `_lstm_mps` has `MPS: _lstm_mps`.
    db = load("mps", "2.13")
    assert db.is_native("lgamma.out") and db.is_native("lgamma") and db.is_native("_lstm_mps")
    assert db.fallback_default == "error"


@pytest.mark.parametrize("target", DB_TARGETS)
def test_fallback_switch_agrees_with_targets_table(target):
    db = load(target, "2.13")
    env = get_target(target).fallback_env
    if env:
        assert db.fallback_env.split("=")[0] == env
    else:
        assert db.fallback_env == ""


def test_unknown_target_is_a_clear_error():
    with pytest.raises(OpDbError, match="no op database for target 'hpu'"):
        load("hpu", "2.13")


def test_corrupt_database_names_the_file(tmp_path):
    (tmp_path / "npu.json").write_text('{"format": 1,\n "ops": [}')
    with pytest.raises(OpDbError, match=r"npu\.json:2:"):
        load("npu", "2.13", directory=tmp_path)


def test_generator_rejects_a_bad_version_gate():
    gen = _gen_module()
    with pytest.raises(gen.GenError, match="two ends"):
        gen.expand_gate(["v2.1"], ["v2.1", "v2.2"], "f.yaml: official[0]")
    assert gen.expand_gate("v2.1, v2.2", ["v2.1", "v2.2", "v2.3"], "x") == {"v2.1", "v2.2"}
    versions = ["v2.1", "v2.2", "v2.3", "v2.6", "v2.7"]
    assert gen.compress_versions({"v2.1", "v2.2", "v2.3", "v2.7"}, versions) == "2.1-2.3,2.7"


def test_torch_sources_record_the_installed_torch_commit():
    # mps, xpu and aten.json come from the installed wheel's native_functions.yaml: the commit is
    # torch.version.git_version of the torch that generated them.
    import torch

    for name in ("mps", "xpu", "aten"):
        doc = json.loads((REPO / "data" / "opdb" / f"{name}.json").read_text())
        wheel = [s for s in doc["sources"] if s["file"].startswith("torchgen/")]
        assert wheel and all(s["commit"] == torch.version.git_version for s in wheel), name


def test_report_says_when_the_installed_torch_is_not_the_databases(tmp_path):
    # A database generated under another torch (here: a copy edited to claim 2.12.0) is named in the report.
    import shutil

    import torch

    from torchport.check_ops.classify import Classifier
    from torchport.check_ops.opdb import _load_raw

    for name in ("mps", "npu", "aten"):
        shutil.copy(REPO / "data" / "opdb" / f"{name}.json", tmp_path / f"{name}.json")
    for name in ("mps", "npu"):
        doc = json.loads((tmp_path / f"{name}.json").read_text())
        doc["generated_with_torch"] = "2.12.0"
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    _load_raw.cache_clear()
    old_mps = Classifier(load("mps", "2.13", directory=tmp_path))._version_notes()
    assert any("native_functions.yaml of torch 2.12.0" in n and torch.__version__ in n for n in old_mps)
    # npu's list is op-plugin's, gated per version: the torch that ran the generator does not matter
    assert Classifier(load("npu", "2.13", directory=tmp_path))._version_notes() == []
    assert Classifier(load("mps", "2.13"))._version_notes() == []


def test_npu_fused_advice_read_from_ascends_migration_tool():
    # affinity_list_1_11_0.json `torch`: torch.roll -> torch_npu.contrib.function.roll;
    # precision_performance_advice.json: torch.optim.AdamW -> apex.optimizers.NpuFusedAdamW.
    db = load("npu", "2.13")
    assert db.fused_advice["roll"]["use"] == "torch_npu.contrib.function.roll"
    assert db.fused_advice["matmul"]["use"] == "torch_npu.contrib.function.matmul_transpose"
    assert db.optimizer_advice["torch.optim.AdamW"]["use"] == "apex.optimizers.NpuFusedAdamW"
    assert load("mlu", "2.13").fused_advice == {}
