#!/usr/bin/env python3
"""Regenerate the per-target native-kernel databases in data/opdb/ used by `torchport check-ops`.

Inputs (facts only, nothing is copied but operator names and their version gates):
  - UPSTREAM (default ../shared/upstream next to the repository, see its PROVENANCE.md):
      npu:  ascend-op-plugin/op_plugin_functions.yaml (per-torch-version gates),
            ascend-torch_npu/npu_native_functions.yaml
      mlu:  cambricon-torch_mlu/mlu_functions.yaml
      musa: moorethreads-torch_musa/musa_functions.yaml, moorethreads-torch_musa/ops_list.md
      xpu:  intel-torch-xpu-ops/xpu_fallback_ops.txt
  - the installed torch's torchgen/packaged/ATen/native/native_functions.yaml: the MPS and XPU
    dispatch keys (with structured delegates) and the set of known aten overloads.

Usage:  python tools/gen_opdb.py [UPSTREAM] [--out DIR] [--check]
  --check  compare with the files in DIR instead of writing them; exit 1 with a diff if stale.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.metadata
import importlib.util
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

import yaml

REPO = Path(__file__).resolve().parent.parent


def _fallback(target: str) -> dict[str, str]:
    """The target's fallback behaviour from data/targets.json, the one source of per-target facts."""
    doc = json.loads((REPO / "data" / "targets.json").read_text(encoding="utf-8"))
    fb = next(t["fallback"] for t in doc["targets"] if t["name"] == target)
    return {k: fb[k] for k in ("default", "env", "env_effect", "note")}


FORMAT = 1
TARGETS = ("npu", "mlu", "musa", "mps", "xpu")

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader


class GenError(Exception):
    pass


def _load_yaml(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8") as f:
            return yaml.load(f, Loader=_Loader)
    except OSError as e:
        raise GenError(f"{path}: cannot read: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise GenError(f"{path}: not valid YAML: {e}") from None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise GenError(f"{path}: cannot read: {e.strerror}") from None


def op_name(func: str) -> str:
    """`add.Tensor(Tensor self, ...) -> Tensor` -> `add.Tensor`; a bare name is returned stripped."""
    return func.split("(", 1)[0].strip()


def parse_provenance(upstream: Path) -> dict[str, dict[str, str]]:
    """folder -> {repository, commit, path} from the table in PROVENANCE.md."""
    text = _read_text(upstream / "PROVENANCE.md")
    rows: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or not cells[0].endswith("/") or not re.fullmatch(r"[0-9a-f]{40}", cells[2]):
            continue
        rows[cells[0].rstrip("/")] = {"repository": cells[1], "commit": cells[2], "path": cells[3]}
    if not rows:
        raise GenError(f"{upstream / 'PROVENANCE.md'}: no provenance table found")
    return rows


def _source(prov: dict[str, dict[str, str]], upstream: Path, rel: str) -> dict[str, str]:
    folder = rel.split("/", 1)[0]
    if folder not in prov:
        raise GenError(f"{upstream / 'PROVENANCE.md'}: no row for {folder}/")
    return {"file": rel, "repository": prov[folder]["repository"], "commit": prov[folder]["commit"]}


# --- version gates of op_plugin_functions.yaml --------------------------------------------------


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.lstrip("v").split("."))


def expand_gate(gate: Any, all_versions: list[str], where: str) -> set[str]:
    """Versions a gate enables. Forms (README-config.md of op-plugin): `all_version`, a closed
    interval `[v2.1, v2.12]` / `[v2.1, newest]`, or a comma list `v2.1, v2.2`."""
    if gate is None:
        return set()
    if isinstance(gate, str) and gate.strip() == "all_version":
        return set(all_versions)
    if isinstance(gate, list):
        if len(gate) != 2:
            raise GenError(f"{where}: version interval must have two ends, got {gate!r}")
        lo, hi = (str(x).strip() for x in gate)
        hi = all_versions[-1] if hi == "newest" else hi
        return {v for v in all_versions if _vkey(lo) <= _vkey(v) <= _vkey(hi)}
    if isinstance(gate, str):
        out = {v.strip() for v in gate.split(",") if v.strip()}
        unknown = out - set(all_versions)
        if unknown - {"v1.11", "v2.0"}:  # versions older than all_version are simply dropped
            raise GenError(f"{where}: unknown torch version(s) {sorted(unknown)}")
        return out & set(all_versions)
    raise GenError(f"{where}: cannot read version gate {gate!r}")


def compress_versions(versions: set[str], all_versions: list[str]) -> str:
    """{'v2.1','v2.2','v2.3','v2.7'} -> '2.1-2.3,2.7' (runs in all_versions order)."""
    runs: list[list[str]] = []
    prev_in = False
    for v in all_versions:
        if v in versions:
            if prev_in:
                runs[-1].append(v)
            else:
                runs.append([v])
        prev_in = v in versions
    return ",".join(r[0][1:] if len(r) == 1 else f"{r[0][1:]}-{r[-1][1:]}" for r in runs)


def gen_npu(upstream: Path, prov: dict[str, dict[str, str]], aten: set[str]) -> dict[str, Any]:
    rel_plugin = "ascend-op-plugin/op_plugin_functions.yaml"
    rel_native = "ascend-torch_npu/npu_native_functions.yaml"
    doc = _load_yaml(upstream / rel_plugin)
    if not isinstance(doc, dict) or "all_version" not in doc:
        raise GenError(f"{upstream / rel_plugin}: no all_version key")
    all_versions = sorted((str(v) for v in doc["all_version"]), key=_vkey)
    gated: dict[str, set[str]] = {}
    for section in ("official", "symint", "autograd"):
        for i, entry in enumerate(doc.get(section) or []):
            where = f"{upstream / rel_plugin}: {section}[{i}]"
            if not isinstance(entry, dict) or "func" not in entry:
                raise GenError(f"{where}: entry without func")
            name = op_name(str(entry["func"]))
            vs = expand_gate(entry.get("acl_op"), all_versions, where) | expand_gate(
                entry.get("op_api"), all_versions, where
            )
            gated.setdefault(name, set()).update(vs)
    native = _load_yaml(upstream / rel_native)
    core: list[str] = []
    for entry in native.get("supported") or []:
        core.append(op_name(str(entry["func"] if isinstance(entry, dict) else entry)))
    ops = {n: compress_versions(vs, all_versions) for n, vs in sorted(gated.items()) if vs}
    advice, optimizer_advice = gen_npu_advice(upstream)
    return {
        "target": "npu",
        "sources": [_source(prov, upstream, rel_plugin), _source(prov, upstream, rel_native)],
        "advice_sources": [_source(prov, upstream, rel) for rel in ADVICE_FILES],
        "fused_advice": advice,
        "optimizer_advice": optimizer_advice,
        "torch_versions": [v[1:] for v in all_versions],
        "torch_version_note": "op_plugin_functions.yaml gates each overload per torch version "
        "(acl_op or op_api); npu_native_functions.yaml (supported:) holds for every version.",
        "closed_world": True,
        "closed_world_note": "An aten overload in neither file is reported as a CPU fallback (unless a "
        "generic kernel of torch runs instead). torch_npu also registers some kernels by hand in C++; "
        "such an op would be misreported as a fallback. The op-plugin lists do not say which.",
        "fallback": _fallback("npu"),
        "always_fallback": [],
        "ops_gated": ops,
        "ops_all_versions": sorted(set(core)),
        "not_in_torch": sorted(n for n in set(ops) | set(core) if n not in aten),
    }


# Python APIs of Ascend's migration-tool advice -> the aten operator a CPU trace records for them (the
# operator the API dispatches to: torch.nn.Linear -> aten::linear, torch.nn.SiLU -> aten::silu, ...).
ADVICE_ATEN = {
    "torch.matmul": "matmul",
    "torch.roll": "roll",
    "torch.nn.SiLU": "silu",
    "torch.nn.Linear": "linear",
}
ADVICE_FILES = (
    "ascend-msfmktransplt/affinity_list_1_11_0.json",
    "ascend-msfmktransplt/precision_performance_advice.json",
)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as e:
        raise GenError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None


def gen_npu_advice(upstream: Path) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """(aten op -> advice, optimizer class -> advice) from Ascend's migration tool: the fused or affine APIs
    it advises (affinity_list `torch` section; api_performance_dict entries that name a fused replacement)."""
    rel_aff, rel_adv = ADVICE_FILES
    aff = _read_json(upstream / rel_aff)
    adv = _read_json(upstream / rel_adv)
    ops: dict[str, dict[str, str]] = {}
    for entry in (aff.get("torch") or {}).values():
        full, api = str(entry.get("full_name", "")), str(entry.get("affinity_api", ""))
        if full in ADVICE_ATEN and api:
            ops[ADVICE_ATEN[full]] = {"api": full, "use": api, "source": rel_aff}
    optimizers: dict[str, dict[str, str]] = {}
    for api, text in (adv.get("api_performance_dict") or {}).items():
        first = str(text).split("\n", 1)[0].strip()
        m = re.search(r"(?:modifying to|Replaced by fusion operator) ([A-Za-z0-9_.]+)", first)
        if not m:
            continue
        use = m.group(1).rstrip(".")
        if api.startswith("torch.optim."):
            optimizers[api] = {"api": api, "use": use, "source": rel_adv}
        elif api in ADVICE_ATEN:
            if use == "NpuLinear":  # its body calls torch.npu_linear (the advice text defines the class)
                use = "torch.npu_linear (the NpuLinear class the advice defines)"
            ops.setdefault(ADVICE_ATEN[api], {"api": api, "use": use, "source": rel_adv})
    return dict(sorted(ops.items())), dict(sorted(optimizers.items()))


def gen_mlu(upstream: Path, prov: dict[str, dict[str, str]], aten: set[str]) -> dict[str, Any]:
    rel = "cambricon-torch_mlu/mlu_functions.yaml"
    doc = _load_yaml(upstream / rel)
    ops: set[str] = set()
    for i, entry in enumerate(doc.get("aten") or []):
        if not isinstance(entry, dict) or "func" not in entry:
            raise GenError(f"{upstream / rel}: aten[{i}]: entry without func")
        keys = str(entry.get("dispatch", "PrivateUse1"))
        if "PrivateUse1" in [k.strip() for k in keys.split(",")]:
            ops.add(op_name(str(entry["func"])))
    vision = sorted(
        "torchvision::" + op_name(str(e["func"])) for e in (doc.get("vision") or []) if isinstance(e, dict)
    )
    return {
        "target": "mlu",
        "sources": [_source(prov, upstream, rel)],
        "torch_versions": ["2.4"],
        "torch_version_note": "Cambricon/torch_mlu branch r2.4_develop (torch 2.4); no per-version gates.",
        "closed_world": True,
        "closed_world_note": "An aten overload not in mlu_functions.yaml (aten:, dispatch PrivateUse1) is "
        "reported as a CPU fallback (unless a generic kernel of torch runs instead). Kernels registered by "
        "hand in C++ would be misreported; the list does not say which.",
        "fallback": _fallback("mlu"),
        "always_fallback": [],
        "ops_all_versions": sorted(ops | set(vision)),
        "not_in_torch": sorted(n for n in ops if n not in aten),
    }


def gen_musa(upstream: Path, prov: dict[str, dict[str, str]], aten: set[str]) -> dict[str, Any]:
    rel = "moorethreads-torch_musa/musa_functions.yaml"
    rel_list = "moorethreads-torch_musa/ops_list.md"
    doc = _load_yaml(upstream / rel)
    if not isinstance(doc, list):
        raise GenError(f"{upstream / rel}: expected a list of `- func:` entries")
    ops: set[str] = set()
    in_yaml: set[str] = set()
    for i, entry in enumerate(doc):
        if not isinstance(entry, dict) or "func" not in entry:
            raise GenError(f"{upstream / rel}: entry {i}: no func")
        in_yaml.add(op_name(str(entry["func"])))
        disp = entry.get("dispatch")
        keys = {k.strip() for k in ",".join(disp.keys()).split(",")} if isinstance(disp, dict) else set()
        if not keys or "PrivateUse1" in keys or "CompositeExplicitAutograd" in keys:
            ops.add(op_name(str(entry["func"])))
    listed: set[str] = set()
    for line in _read_text(upstream / rel_list).splitlines():
        m = re.fullmatch(r"- `(?:aten::)?([A-Za-z0-9_.]+)`(.*)", line.strip())
        if m and "quantized" not in m.group(2):
            listed.add(m.group(1))
    return {
        "target": "musa",
        "sources": [_source(prov, upstream, rel), _source(prov, upstream, rel_list)],
        "torch_versions": ["2.7"],
        "torch_version_note": "MooreThreads/torch_musa v2.7.1 (needs its patched torch 2.7.1).",
        "closed_world": True,
        "closed_world_note": "An overload not in musa_functions.yaml (dense PrivateUse1 kernels) nor in "
        "ops_list.md (torch_musa's own scan of its YAML and C++ registrations) is reported as missing.",
        "fallback": _fallback("musa"),
        "always_fallback": [],
        "ops_all_versions": sorted(ops),
        # ops_list.md does not say which dispatch key a registration is for: an op the YAML registers
        # only for a quantized or sparse key is not taken as a dense kernel.
        "ops_outside_yaml": sorted(listed - in_yaml),
        "not_in_torch": sorted(n for n in ops | listed if n not in aten),
    }


def torch_git_version() -> str:
    """The commit the installed torch was built from (`git_version` in torch/version.py), read without
    importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise GenError("torch is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "version.py"
    m = re.search(r"^git_version\s*=\s*['\"]([0-9a-f]{40})['\"]", _read_text(path), re.M)
    if not m:
        raise GenError(f"{path}: no git_version")
    return m.group(1)


def native_functions_path() -> Path:
    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        raise GenError("torchgen (part of the torch wheel) is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "packaged/ATen/native/native_functions.yaml"
    if not path.is_file():
        raise GenError(f"{path}: not found in the installed torch")
    return path


def dispatch_ops(entries: list[dict[str, Any]], key: str) -> set[str]:
    """Overloads with a kernel for `key`, plus the structured-delegate variants of those."""
    explicit: set[str] = set()
    for e in entries:
        disp = e.get("dispatch")
        if isinstance(disp, dict):
            keys = {k.strip() for spec in disp for k in str(spec).split(",")}
            if key in keys:
                explicit.add(op_name(str(e["func"])))
    delegated = {
        op_name(str(e["func"])) for e in entries if e.get("structured_delegate") in explicit and "func" in e
    }
    return explicit | delegated


def gen_inline(
    target: str,
    entries: list[dict[str, Any]],
    nf_rel: str,
    torch_version: str,
    upstream: Path,
    prov: dict[str, dict[str, str]],
    aten: set[str],
    torch_commit: str,
) -> dict[str, Any]:
    key = target.upper()
    ops = dispatch_ops(entries, key)
    nf_source = {
        "file": nf_rel,
        "repository": "pytorch/pytorch (the installed wheel)",
        "commit": torch_commit,
    }
    short = ".".join(torch_version.split("+")[0].split(".")[:2])
    if target == "mps":
        return {
            "target": "mps",
            "sources": [nf_source],
            "torch_versions": [short],
            "torch_version_note": f"MPS keys of native_functions.yaml in torch {torch_version}.",
            "closed_world": True,
            "closed_world_note": "MPS is in-tree: its kernels are the MPS keys of native_functions.yaml. "
            "A few MPS kernels registered in Objective-C++ outside the YAML would be misreported.",
            "fallback": _fallback("mps"),
            "always_fallback": [],
            "ops_all_versions": sorted(ops),
            "not_in_torch": [],
        }
    rel_fb = "intel-torch-xpu-ops/xpu_fallback_ops.txt"
    fb_lines = [ln.strip() for ln in _read_text(upstream / rel_fb).splitlines() if ln.strip()]
    # add.out is a structured kernel every device must provide: if native_functions.yaml has no XPU
    # key for it, the XPU kernels of this torch version come from torch-xpu-ops' own YAML instead.
    complete = "add.out" in ops
    note = (
        "XPU kernels are XPU keys of native_functions.yaml in this torch version."
        if complete
        else f"native_functions.yaml of torch {torch_version} has only {len(ops)} XPU overloads (the oneDNN "
        "gemm/attention kernels); the rest are registered from torch-xpu-ops' own YAML, which is not in the "
        "upstream data. An overload not listed is therefore reported as unknown, not as a fallback."
    )
    return {
        "target": "xpu",
        "sources": [nf_source, _source(prov, upstream, rel_fb)],
        "torch_versions": [short],
        "torch_version_note": f"XPU keys of native_functions.yaml in torch {torch_version}.",
        "closed_world": complete,
        "closed_world_note": note,
        "fallback": _fallback("xpu"),
        "always_fallback": sorted(n for n in fb_lines if n in aten),
        "ignored_fallback_entries": sorted(n for n in fb_lines if n not in aten),
        "ops_all_versions": sorted(ops),
        "not_in_torch": [],
    }


def generate(upstream: Path) -> dict[str, str]:
    """file name -> JSON text for every database."""
    if not upstream.is_dir():
        raise GenError(f"{upstream}: upstream data folder not found")
    prov = parse_provenance(upstream)
    nf_path = native_functions_path()
    entries = _load_yaml(nf_path)
    if not isinstance(entries, list):
        raise GenError(f"{nf_path}: expected a list of entries")
    entries = [e for e in entries if isinstance(e, dict) and "func" in e]
    aten = {op_name(str(e["func"])) for e in entries}
    # the public version only: a +cpu or +cu128 build carries the same native_functions.yaml
    torch_version = importlib.metadata.version("torch").split("+")[0]
    torch_commit = torch_git_version()
    nf_rel = "torchgen/packaged/ATen/native/native_functions.yaml"
    dbs = {
        "npu": gen_npu(upstream, prov, aten),
        "mlu": gen_mlu(upstream, prov, aten),
        "musa": gen_musa(upstream, prov, aten),
        "mps": gen_inline("mps", entries, nf_rel, torch_version, upstream, prov, aten, torch_commit),
        "xpu": gen_inline("xpu", entries, nf_rel, torch_version, upstream, prov, aten, torch_commit),
    }
    delegates = {
        op_name(str(e["func"])): str(e["structured_delegate"])
        for e in entries
        if e.get("structured_delegate")
    }
    dbs["aten"] = {
        "target": "",
        "sources": [
            {"file": nf_rel, "repository": "pytorch/pytorch (the installed wheel)", "commit": torch_commit}
        ],
        "torch_versions": [".".join(torch_version.split("+")[0].split(".")[:2])],
        "about": "structured_delegate of native_functions.yaml: a functional or in-place overload runs "
        "through the out= overload it delegates to, on any device that implements that one (the "
        "CompositeExplicitAutogradNonFunctional kernel torchgen generates for it is the dispatcher's default "
        "for every backend without a kernel of its own). native_functions: every overload the YAML declares; "
        "an aten operator outside it is registered in C++, where no vendor YAML can be checked.",
        "structured_delegate": dict(sorted(delegates.items())),
        "native_functions": sorted(aten),
    }
    out: dict[str, str] = {}
    for name, db in dbs.items():
        doc = {
            "format": FORMAT,
            "generated_by": "tools/gen_opdb.py",
            "generated_with_torch": torch_version,
            **db,
        }
        out[f"{name}.json"] = json.dumps(doc, indent=1, sort_keys=False, ensure_ascii=False) + "\n"
    return out


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def stale_diff(files: dict[str, str], out_dir: Path) -> str:
    diffs: list[str] = []
    for name, text in files.items():
        path = out_dir / name
        old = path.read_text(encoding="utf-8") if path.is_file() else ""
        if old != text:
            diffs.extend(
                difflib.unified_diff(
                    old.splitlines(keepends=True),
                    text.splitlines(keepends=True),
                    fromfile=f"{path} (committed)",
                    tofile=f"{path} (regenerated)",
                    n=1,
                )
            )
    return "".join(diffs)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("upstream", nargs="?", default=str(REPO.parent / "shared" / "upstream"))
    ap.add_argument("--out", default=str(REPO / "data" / "opdb"))
    ap.add_argument("--check", action="store_true", help="fail with a diff if the files are stale")
    args = ap.parse_args(argv)
    try:
        files = generate(Path(args.upstream))
    except GenError as e:
        print(f"gen_opdb: error: {e}", file=sys.stderr)
        return 2
    out_dir = Path(args.out)
    if args.check:
        diff = stale_diff(files, out_dir)
        if diff:
            sys.stdout.write(diff)
            print("gen_opdb: the databases are stale; run python tools/gen_opdb.py", file=sys.stderr)
            return 1
        return 0
    for name, text in files.items():
        _write_atomic(out_dir / name, text)
        print(f"wrote {out_dir / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
