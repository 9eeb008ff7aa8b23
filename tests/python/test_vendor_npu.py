"""The catalogue's npu mappings checked against the vendor's own torch_npu (issue 31 §1).

tools/check_vendor_npu.py reads the Python source of the pinned torch-npu wheels
(data/vendor/torch_npu_wheels.json) and writes data/vendor/torch_npu_check.json. CI runs the tool with
--check, which downloads the wheels; these tests need no network:
- the committed result covers every npu mapping the catalogue has now, and every one resolved;
- the tool's resolver is right on small hand-written module sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools_testlib import load_tool

REPO = Path(__file__).resolve().parents[2]
RESULT = REPO / "data" / "vendor" / "torch_npu_check.json"
WHEELS = REPO / "data" / "vendor" / "torch_npu_wheels.json"
REGEN = "run tools/check_vendor_npu.py (it downloads the pinned torch-npu wheels)"


tool = load_tool("check_vendor_npu")


# --- the committed result against the catalogue as it is now ---------------------------------------


def result() -> dict:
    return json.loads(RESULT.read_text())


def test_result_covers_every_npu_mapping_of_the_catalogue():
    checked = {(r["api"], r["replacement"]) for r in result()["mappings"]}
    missing = []
    for e in tool.catalogue_mappings(REPO):
        m = e["mapping"]
        if e["kind"] == "string" and m.get("replacement") == e["api"]:
            continue  # kept as it is (`device_types="cuda"`): names nothing of torch_npu
        if m.get("rewritten_by"):
            continue  # a rule's rewrite of the code (comparisons): names nothing of torch_npu
        if m.get("replacement") and (e["api"], m["replacement"]) not in checked:
            missing.append(f"{e['file']}: {e['api']} -> {m['replacement']}")
        for api, moved in m.get("moves_with", {}).items():
            if (api, moved) not in checked:
                missing.append(f"{e['file']}: {api} -> {moved} (moves with {e['api']})")
    assert not missing, f"npu mappings the vendor check has not seen ({REGEN}):\n" + "\n".join(missing)


def test_every_npu_mapping_resolves_in_every_pinned_wheel():
    doc = result()
    pinned = [w["version"] for w in json.loads(WHEELS.read_text())["wheels"]]
    assert doc["wheels"] == pinned, REGEN
    bad = []
    for r in doc["mappings"]:
        if r.get("outside"):
            continue
        assert sorted(r["wheels"]) == sorted(pinned), r["api"]
        for version, w in r["wheels"].items():
            if not w["ok"]:
                bad.append(f"{r['api']} -> {r['checked']} on torch_npu {version}: {w['how']}")
    assert not bad, "npu mappings the vendor's torch_npu does not resolve:\n" + "\n".join(bad)
    assert doc["summary"]["unresolved"] == 0


def test_outside_the_wheel_only_where_the_catalogue_says_so():
    by_api = {
        (e["api"], e["mapping"].get("replacement")): e["mapping"] for e in tool.catalogue_mappings(REPO)
    }
    outside = [r for r in result()["mappings"] if r.get("outside")]
    assert len(outside) == result()["summary"]["outside_the_wheel"]
    for r in outside:
        assert by_api[(r["api"], r["replacement"])].get("read_by") == r["outside"]


def test_no_claim_of_absence_is_contradicted_and_none_returns_are_recorded():
    doc = result()
    contradicted = [
        f"{a['api']}: {a['checked']} exists ({a['where']})" for a in doc["absences"] if a["contradicted"]
    ]
    assert not contradicted, "the catalogue says torch_npu lacks what it has:\n" + "\n".join(contradicted)
    by_api = {e["api"]: e["mapping"] for e in tool.catalogue_mappings(REPO)}
    for r in doc["returns"]:
        assert by_api[r["api"]].get("returns"), (
            f"{r['api']}: {r['replacement']} returns None ({r['returns_none_at']})"
        )


def test_the_facts_of_issue_31_are_in_the_catalogue():
    by_api = {e["api"]: e["mapping"] for e in tool.catalogue_mappings(REPO)}
    tf32 = by_api["torch.backends.cuda.matmul.allow_tf32"]
    assert tf32["replacement"] == "torch_npu.npu.matmul.allow_hf32"
    assert tf32["changes"].startswith("changes numerics")
    assert by_api["torch.cuda.default_generators"]["replacement"] == "torch_npu.npu.default_generators"
    cap = by_api["torch.cuda.get_device_capability"]
    assert cap["returns"] == "None" and cap["status"] == "partial"
    assert "TORCH_NPU_DEVICE_CAPABILITY" in cap["note"]
    rows = {r["api"]: r for r in result()["returns"]}
    assert rows["torch.cuda.get_device_capability"]["returns_none_at"].keys() == {
        w["version"] for w in json.loads(WHEELS.read_text())["wheels"]
    }
    prof = by_api["torch.profiler.ProfilerActivity.CUDA"]
    assert prof["moves_with"]["torch.profiler.profile"] == "torch_npu.profiler.profile"


def test_the_pinned_wheels_name_a_hash_and_a_torch_line():
    doc = json.loads(WHEELS.read_text())
    for w in doc["wheels"]:
        assert len(w["sha256"]) == 64 and int(w["sha256"], 16) >= 0
        assert w["filename"].startswith(f"torch_npu-{w['version']}-")
        assert w["torch"] == ".".join(w["version"].split(".")[:2])


# --- the resolver on hand-written sources ------------------------------------------------------------


def wheel(files: dict[str, str], extra: dict[str, str] | None = None):
    return tool.Wheel("test", {f"torch_npu/{k}": v for k, v in files.items()}, extra)


SOURCES = {
    "__init__.py": "from . import npu\nfrom .profiler import *\n",
    "npu/__init__.py": (
        '__all__ = ["only_listed", "defined", "Thing"]\n'
        "from .impl import *\n"
        "from .config import _Flags\n"
        "from torch_npu._C import _npu_getDeviceCount as device_count_c\n"
        "flags = _Flags()\n"
        "def defined():\n    return 1\n"
        "try:\n    in_try = 1\nexcept ImportError:\n    pass\n"
        "def cap():\n    if x:\n        return None\n    return (8, 0)\n"
    ),
    "npu/impl.py": '__all__ = ["Thing", "reexported"]\n'
    "class Thing:\n    kind = 1\ndef reexported():\n    pass\ndef not_exported():\n    pass\n",
    "npu/noall.py": "def public():\n    pass\ndef _private():\n    pass\n",
    "npu/config.py": (
        "class _Flags:\n"
        "    def __setattr__(self, name, value):\n"
        '        if name == "allow_hf32":\n            set_it(value)\n'
        '        elif name in ("cube_math_type",):\n            set_other(value)\n'
    ),
    "npu/stored.py": (
        "class _Stored:\n"
        "    def __setattr__(self, name, value):\n"
        '        if name == "a":\n            check(value)\n'
        "        object.__setattr__(self, name, value)\n"
        "stored = _Stored()\n"
    ),
    "profiler/__init__.py": (
        "from torch_npu._C._profiler import ProfilerActivity\n__all__ = ['ProfilerActivity']\n"
    ),
    "elsewhere.py": "acts = [torch_npu.profiler.ProfilerActivity.NPU]\n",
}


@pytest.mark.parametrize(
    "name, ok, how",
    [
        ("torch_npu.npu", True, "module"),
        ("torch_npu.npu.defined", True, "function"),
        ("torch_npu.npu.only_listed", True, "listed in __all__ only"),
        ("torch_npu.npu.Thing", True, "class"),  # through `from .impl import *`, in impl's __all__
        ("torch_npu.npu.reexported", True, "function"),
        ("torch_npu.npu.not_exported", False, "torch_npu.npu has no not_exported"),  # not in impl's __all__
        ("torch_npu.npu.missing", False, "torch_npu.npu has no missing"),
        ("torch_npu.npu.in_try", True, "assigned"),
        ("torch_npu.npu.impl.not_exported", True, "function"),
        ("torch_npu.npu.Thing.kind", True, "attribute of class Thing"),
        ("torch_npu.npu.Thing.nope", False, "class Thing has no nope"),
        (
            "torch_npu.npu.device_count_c",
            True,
            "C extension (the vendor's Python takes it from torch_npu._C)",
        ),
        ("torch_npu.npu.flags.allow_hf32", True, "handled by _Flags.__setattr__"),
        ("torch_npu.npu.flags.cube_math_type", True, "handled by _Flags.__setattr__"),
        (
            "torch_npu.npu.flags.allow_tf32",
            False,
            "_Flags.__setattr__ handles only allow_hf32, cube_math_type: "
            "a write of allow_tf32 is silently ignored",
        ),
        (
            "torch_npu.npu.stored.stored.anything",
            True,
            "stored by _Stored.__setattr__",
        ),  # __setattr__ stores every name
        ("torch_npu.profiler.ProfilerActivity.NPU", True, "C extension: ProfilerActivity.NPU is used"),
        ("torch_npu.profiler.ProfilerActivity.GPU", False, "the vendor's Python never names it"),
        ("torch_npu.npu_fusion_attention", False, "torch_npu has no npu_fusion_attention"),  # no export loop
    ],
)
def test_resolver(name, ok, how):
    found = wheel(SOURCES).resolve(name)
    assert found.ok is ok, found
    assert how in found.how, found.how


def test_resolver_where_names_the_defining_file_and_line():
    found = wheel(SOURCES).resolve("torch_npu.npu.reexported")
    assert found.where == "torch_npu/npu/impl.py:4"


def test_star_import_without_all_exports_public_names_only():
    files = dict(SOURCES, **{"npu/__init__.py": "from .noall import *\n"})
    w = wheel(files)
    assert w.resolve("torch_npu.npu.public").ok
    assert not w.resolve("torch_npu.npu._private").ok


def test_operators_are_exported_only_through_the_dir_loop():
    yaml = "custom:\n  - func: npu_fusion_attention(Tensor query) -> Tensor\n"
    loop = "for name in dir(torch.ops.npu):\n    globals()[name] = getattr(torch.ops.npu, name)\n"
    files = dict(SOURCES, **{"__init__.py": SOURCES["__init__.py"] + loop})
    w = wheel(files, {tool.CODEGEN_YAML: yaml})
    found = w.resolve("torch_npu.npu_fusion_attention")
    assert found.ok and "dir(torch.ops.npu)" in found.how
    assert not w.resolve("torch_npu.npu_not_an_op").ok
    assert not wheel(SOURCES, {tool.CODEGEN_YAML: yaml}).resolve("torch_npu.npu_fusion_attention").ok


def test_returns_none_lines():
    w = wheel(SOURCES)
    assert w.returns_none("torch_npu.npu.cap") == [14]  # the `return None`, not `return (8, 0)`
    assert w.returns_none("torch_npu.npu.defined") == []


def test_the_checker_fails_a_mapping_the_wheel_lacks(monkeypatch):
    w = wheel(SOURCES)
    pin = {"version": "9.9.0", "torch": "9.9"}
    checker = tool.Checker([(pin, w)], None)
    entries = [
        {
            "file": "x.json",
            "api": "torch.cuda.defined",
            "kind": "function",
            "explicit": True,
            "mapping": {"replacement": "torch_npu.npu.defined", "status": "supported"},
        },
        {
            "file": "x.json",
            "api": "torch.cuda.gone",
            "kind": "function",
            "explicit": True,
            "mapping": {"replacement": "torch_npu.npu.gone", "status": "supported"},
        },
        {
            "file": "x.json",
            "api": "torch.cuda.newer",
            "kind": "function",
            "explicit": True,
            "mapping": {"replacement": "torch_npu.npu.gone", "status": "supported", "min_torch": "10.0"},
        },
        {
            "file": "x.json",
            "api": "torch.cuda.cap",
            "kind": "function",
            "explicit": True,
            "mapping": {"replacement": "", "status": "unsupported", "note": "torch_npu.npu has no Thing"},
        },
    ]
    doc = checker.run(entries)
    assert doc["summary"]["mappings_checked"] == 3
    assert doc["summary"]["unresolved"] == 1
    assert [r["api"] for r in doc["mappings"] if not r["ok"]] == ["torch.cuda.gone"]
    assert doc["absences"][0]["contradicted"] == ["9.9.0"]
