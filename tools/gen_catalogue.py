#!/usr/bin/env python3
"""Regenerate the derived part of torchport's knowledge base.

Writes, from the vendor lists in shared/upstream (see its PROVENANCE.md), the hand-checked
overrides in data/sources/torch_cuda_overrides.json and the installed torch (introspection):

- data/catalogue/torch_cuda.json: every public torch.cuda API (plus torch.cuda.amp and
  torch.cuda.nvtx) with its replacement and status on each target;
- data/catalogue/support/npu.json: Ascend's per-torch-version supported / unsupported API lists;
- data/catalogue/support/mlu.json: Cambricon's torch API support list.

Usage: tools/gen_catalogue.py [--upstream DIR] [--check]
  --check  compare with the files in data/ and exit 1 with a diff when they are stale.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import inspect
import json
import sys
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_UPSTREAM = Path("/work/shared/upstream")
TARGETS = ["npu", "mlu", "musa", "xpu", "mps", "hpu", "cpu", "accelerator"]
ASCEND_VERSIONS = {"2.1": "2_1", "2.6": "2_6", "2.7": "2_7", "2.8": "2_8"}

Mapping = dict[str, str]


def _family(name: str) -> str:
    n = name.lower()
    if name.endswith(("Tensor", "Storage")):
        return "tensor-types"
    if "graph" in n:
        return "graphs"
    if any(k in n for k in ("seed", "rng", "generator", "random")):
        return "rng"
    if any(k in n for k in ("stream", "event")):
        return "streams"
    if any(k in n for k in ("memory", "mem_", "cache", "alloc", "mempool", "mem_pool", "cached")):
        return "memory"
    if name in ("amp", "autocast", "GradScaler", "custom_fwd", "custom_bwd"):
        return "amp"
    if name in ("utilization", "temperature", "power_draw", "clock_rate", "list_gpu_processes"):
        return "monitoring"
    if name in ("nvtx", "profiler", "cudart", "check_error", "CudaError", "cudaStatus"):
        return "toolkit"
    return "device"


def _summary(obj: Any) -> str:
    doc = getattr(obj, "__doc__", None) or ""
    if isinstance(obj, type(sys)) or not doc.strip():
        return ""
    line = doc.strip().split("\n")[0].strip()
    return line[:160]


def _public(module: Any) -> set[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
    return {n for n in names if hasattr(module, n)}


def _m(replacement: str, status: str, source: str, note: str = "", min_torch: str = "") -> Mapping:
    out = {"replacement": replacement, "status": status}
    if min_torch:
        out["min_torch"] = min_torch
    if note:
        out["note"] = note
    out["source"] = source
    return out


def _ver(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def _lines(path: Path) -> set[str]:
    return {ln.strip() for ln in path.read_text().splitlines() if ln.strip()}


def _load_mlu_yaml(path: Path) -> dict[str, dict[str, Any]]:
    import yaml

    doc = yaml.safe_load(path.read_text())
    out: dict[str, dict[str, Any]] = {}
    for section in doc:
        for _, items in section.items():
            for item in items or []:
                out[item["api"]] = item
    return out


class Generator:
    def __init__(self, upstream: Path) -> None:
        import torch

        self.torch = torch
        self.upstream = upstream
        self.overrides = json.loads((ROOT / "data/sources/torch_cuda_overrides.json").read_text())
        self.npu_all = _lines(upstream / "ascend-torch_npu/torch_npu.npu.__all__.txt")
        # torch_npu.npu's names in each pinned torch-npu wheel (tools/check_vendor_npu.py)
        vendor = json.loads((ROOT / "data/vendor/torch_npu_namespace.json").read_text())
        self.npu_wheels: list[tuple[str, str, set[str]]] = sorted(
            ((w["torch"], v, set(w["names"])) for v, w in vendor["wheels"].items()), key=lambda x: _ver(x[0])
        )
        self.mlu_all = _lines(upstream / "cambricon-torch_mlu/torch_mlu.mlu.__all__.txt")
        self.mlu_yaml = _load_mlu_yaml(upstream / "cambricon-torch_mlu/torch_api.yaml")
        self.ascend: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
        for ver, suffix in ASCEND_VERSIONS.items():
            sup = json.loads((upstream / f"ascend-msfmktransplt/supported_op_{suffix}.json").read_text())
            uns = json.loads((upstream / f"ascend-msfmktransplt/op_list_{suffix}.json").read_text())
            self.ascend[ver] = (sup["op_list"], uns["op_list"])
        self.tv = torch.__version__.split("+")[0]
        self.intro = f"installed torch {self.tv}"
        self.xpu_names = _public(torch.xpu)
        self.mps_names = _public(torch.mps)
        self.cpu_names = _public(torch.cpu)
        self.accel = _public(torch.accelerator) | {"memory"}
        for name in ("memory_allocated", "max_memory_allocated", "empty_cache", "memory_stats"):
            if hasattr(torch.accelerator, name):
                self.accel.add(name)

    # -- per target --------------------------------------------------------------------------

    def npu(self, name: str, qual: str) -> Mapping:
        src = "upstream ascend-torch_npu/torch_npu.npu.__all__.txt"
        renamed = self.overrides["renamed_classes"]["npu"].get(name, name)
        unsupported = self.ascend["2.8"][1]
        if qual in unsupported:
            tip = unsupported[qual]
            note = "listed as unsupported by Ascend" + ("" if tip == "-" else f": {tip}")
            return _m("", "unsupported", "upstream ascend-msfmktransplt/op_list_2_8.json", note)
        if renamed in self.npu_all or any(renamed in names for _, _, names in self.npu_wheels):
            mapping = self.npu_wheel_versions(renamed, self.npu_versions(qual, self.npu_found(renamed)))
            return self.npu_returns(name, mapping)
        if qual in self.ascend["2.8"][0]:
            return self.npu_versions(
                qual,
                _m(
                    f"torch_npu.npu.{renamed}",
                    "partial",
                    "upstream ascend-msfmktransplt/supported_op_2_8.json",
                    "supported by Ascend's migration list but not exported in torch_npu.npu.__all__",
                ),
            )
        wheels = ", ".join(v for _, v, _ in self.npu_wheels)
        src += f"; torch-npu wheels {wheels} (data/vendor/torch_npu_namespace.json)"
        return _m("", "unsupported", src, f"torch_npu.npu has no {renamed}")

    def npu_returns(self, name: str, mapping: Mapping) -> Mapping:
        """Adds "returns" (what the vendor's function returns where it differs from CUDA's: None,
        another type or unit) and makes the mapping partial: a rule adapts the code or reports it."""
        vr = self.overrides["vendor_returns"]
        if name not in vr["npu"] or not mapping.get("replacement"):
            return mapping
        value, if_none, note = vr["npu"][name]
        mapping["status"] = "partial"
        mapping["note"] = f"{mapping['note']}; {note}" if mapping.get("note") else note
        mapping["returns"] = value
        if if_none:  # what the code gets instead (a call used as a value: `(f() or if_none)`)
            mapping["if_none"] = if_none
        mapping["source"] += f"; {vr['source']}"
        return mapping

    def npu_found(self, name: str) -> Mapping:
        """A torch_npu.npu name that Ascend's __all__ list or the vendor's wheels have."""
        src = "upstream ascend-torch_npu/torch_npu.npu.__all__.txt"
        has = [v for _, v, names in self.npu_wheels if name in names]
        wheels = "torch-npu wheels " + ", ".join(has) + " (data/vendor/torch_npu_namespace.json)"
        if name in self.npu_all:
            return _m(f"torch_npu.npu.{name}", "supported", f"{src}; {wheels}" if has else src)
        return _m(f"torch_npu.npu.{name}", "supported", wheels)

    def npu_wheel_versions(self, name: str, mapping: Mapping) -> Mapping:
        """min_torch from the vendor's wheels: the first checked torch line after the newest one whose
        torch_npu.npu lacks `name`."""
        missing = [(line, v) for line, v, names in self.npu_wheels if name not in names]
        if not missing:
            return mapping
        newest_line, newest_v = missing[-1]
        newer = [line for line, _, _ in self.npu_wheels if _ver(line) > _ver(newest_line)]
        if not newer:
            return _m("", "unsupported", mapping["source"], f"torch_npu {newest_v} has no {name}")
        if _ver(newer[0]) > _ver(mapping.get("min_torch", "0")):
            mapping["min_torch"] = newer[0]
        lacking = ", ".join(v for _, v in missing)
        note = f"torch_npu {lacking} lack{'s' if len(missing) == 1 else ''} torch_npu.npu.{name}"
        mapping["note"] = f"{mapping['note']}; {note}" if mapping.get("note") else note
        return {
            k: mapping[k] for k in ("replacement", "status", "min_torch", "note", "source") if k in mapping
        }

    def npu_versions(self, qual: str, mapping: Mapping) -> Mapping:
        """Ascend's older per-version lists (-v 2.1 ...) that mark `qual` unsupported set min_torch."""
        newest_unsupported = ""
        for ver in sorted(ASCEND_VERSIONS, key=_ver):
            if qual in self.ascend[ver][1]:
                newest_unsupported = ver
        if not newest_unsupported:
            return mapping
        newer = [v for v in ASCEND_VERSIONS if _ver(v) > _ver(newest_unsupported)]
        mapping["min_torch"] = min(newer, key=_ver)
        suffix = ASCEND_VERSIONS[newest_unsupported]
        mapping["source"] += f"; upstream ascend-msfmktransplt/op_list_{suffix}.json lists it as unsupported"
        return {
            k: mapping[k] for k in ("replacement", "status", "min_torch", "note", "source") if k in mapping
        }

    def mlu(self, name: str, qual: str) -> Mapping:
        src = "upstream cambricon-torch_mlu/torch_api.yaml"
        item = self.mlu_yaml.get(qual)
        if item is not None:
            repl = item.get("corresponding MLU api") or ""
            lim = (item.get("limitations") or "").strip()
            if not item.get("supported"):
                return _m("", "unsupported", src, lim or "marked unsupported by Cambricon")
            if not repl:
                repl = f"torch.mlu.{name}"
            return _m(repl, "partial" if lim else "supported", src, lim)
        if name in self.mlu_all:
            return _m(
                f"torch.mlu.{name}", "supported", "upstream cambricon-torch_mlu/torch_mlu.mlu.__all__.txt"
            )
        return _m("", "unsupported", src, f"not in torch_api.yaml and torch.mlu has no {name}")

    def unverified(self, target: str, name: str) -> Mapping:
        module = {"musa": "torch.musa", "hpu": "torch.hpu"}[target]
        renamed = self.overrides["renamed_classes"].get(target, {}).get(name, name)
        source = {
            "musa": "shared/reference/peer-migration-tools.md 3.3 (torch.cuda.* mirrored as torch.musa.*)",
            "hpu": "shared/reference/peer-migration-tools.md 3.2 (torch.cuda.X --> torch.hpu.X in the GPU "
            "Migration Toolkit log)",
        }[target]
        return _m(
            f"{module}.{renamed}",
            "unknown",
            source,
            f"no API list of {module} in the upstream data: check that {module}.{renamed} exists",
        )

    def xpu(self, name: str) -> Mapping:
        renamed = self.overrides["renamed_classes"]["xpu"].get(name, name)
        if renamed in self.xpu_names:
            return _m(f"torch.xpu.{renamed}", "supported", f"{self.intro}: torch.xpu.{renamed}")
        return _m("", "unsupported", f"{self.intro}: dir(torch.xpu)", f"torch.xpu has no {renamed}")

    def mps(self, name: str) -> Mapping:
        ov = self.overrides["mps"]
        if name in ov["names"]:
            repl, status, note = ov["names"][name]
            return _m(repl, status, ov["source"], note)
        if name in self.mps_names:
            return _m(f"torch.mps.{name}", "supported", f"{self.intro}: torch.mps.{name}")
        mv = self.overrides["mps_values"]
        if name in mv["names"]:  # the single device: the call becomes its value
            value, note = mv["names"][name]
            mapping = _m("", "partial", mv["source"], note)
            mapping["without_device"] = value
            return mapping
        rng = self.overrides["torch_level_rng"]
        if name in rng["names"]:
            repl, status, note = rng["names"][name]
            return _m(repl, status, rng["source"], note)
        return _m("", "unsupported", f"{self.intro}: dir(torch.mps)", f"torch.mps has no {name}")

    def without_device(self, name: str, mapping: Mapping) -> Mapping:
        """Adds what a call becomes where there is no device (cpu; accelerator on a CPU-only host)."""
        wd = self.overrides["without_device"]
        if name in wd["names"] and mapping["status"] != "unsupported":
            mapping["without_device"] = wd["names"][name]
        return mapping

    def host_event(self, target: str) -> Mapping:
        ev = self.overrides["host_event"]
        repl, status, note = ev[target]
        return _m(repl, status, ev["source"], note, min_torch="2.6" if target == "accelerator" else "")

    def cpu(self, name: str) -> Mapping:
        if name == "Event":
            return self.host_event("cpu")
        na = self.overrides["cpu_no_accelerator"]
        if name in na["names"]:  # the call becomes its value on a machine without CUDA
            value = na["names"][name]
            mapping = _m("", "supported", na["source"], na["note"].replace("{value}", value))
            mapping["without_device"] = value
            return mapping
        hv = self.overrides["host_values"]
        if name in hv["names"]:
            value, note = hv["names"][name]
            mapping = _m("", "partial", hv["source"], note)
            mapping["without_device"] = value
            return mapping
        wd = self.overrides["without_device"]
        if name in wd["names"]:
            value = wd["names"][name]
            note = wd["note_none"] if value == "None" else wd["note"].replace("{value}", value)
            return self.without_device(name, _m("", "partial", wd["source"], note))
        rng = self.overrides["torch_level_rng"]
        if name in rng["names"]:
            repl, status, note = rng["names"][name]
            return _m(repl, status, rng["source"], note)
        if name in self.cpu_names:
            return _m(f"torch.cpu.{name}", "supported", f"{self.intro}: torch.cpu.{name}")
        notes = {
            "memory": "the CPU has no caching allocator statistics in torch.cpu",
            "graphs": "graph capture is CUDA-only",
            "tensor-types": "use torch.tensor(..., dtype=...) on the cpu device",
        }
        note = notes.get(_family(name), f"torch.cpu has no {name}")
        return _m("", "unsupported", f"{self.intro}: dir(torch.cpu)", note)

    def accelerator(self, name: str) -> Mapping:
        """The accelerator mapping, with the host value of host_values for CPU-only machines."""
        mapping = self._accelerator(name)
        hv = self.overrides["host_values"]
        if name in hv["names"] and mapping["replacement"]:
            value, _ = hv["names"][name]
            mapping["without_device"] = value
            mapping["note"] = (
                f"where the device module has it; without an accelerator the call becomes {value}"
            )
            mapping["source"] = f"{mapping['source']}; {hv['source']}"
        return mapping

    def _accelerator(self, name: str) -> Mapping:
        if name == "Event":
            return self.host_event("accelerator")
        unlike = self.overrides["accelerator_unlike"]
        if name in unlike["names"]:  # the device-agnostic API of that name returns something else
            return _m("", "unsupported", unlike["source"], unlike["names"][name])
        acc = self.overrides["accelerator_api"]
        versions: dict[str, str] = acc["names"]
        target_name = acc["renames"].get(name, name)
        if target_name in versions and target_name in self.accel:
            mapping = self.without_device(
                name,
                _m(
                    f"torch.accelerator.{target_name}",
                    "supported",
                    acc["source"],
                    min_torch=versions[target_name],
                ),
            )
            if "without_device" not in mapping and target_name not in acc["cpu_safe"]:
                # Without an accelerator these raise: the output would not run on CPU-only hosts.
                mapping["status"] = "partial"
                mapping["note"] = acc["cpu_unsafe_note"]
            guarded = self.overrides["accelerator_guarded"]
            if name in guarded["names"]:  # called only when an accelerator is available
                mapping["without_device"] = guarded["names"][name]
                mapping["note"] = guarded["note"]
            return mapping
        rng = self.overrides["torch_level_rng"]
        if name in rng["names"]:
            repl, status, note = rng["names"][name]
            return _m(repl, status, rng["source"], note)
        if name in self.cpu_names and name in self.xpu_names:
            return _m(
                f"torch.get_device_module().{name}",
                "supported",
                f"{self.intro}: torch.get_device_module; {name} is in torch.cpu and torch.xpu",
                "the module of the current accelerator, or torch.cpu without one",
                min_torch="2.6",
            )
        if name in self.xpu_names:
            return _m(
                f"torch.get_device_module().{name}",
                "partial",
                f"{self.intro}: {name} is in torch.xpu but not in torch.cpu",
                "fails on CPU-only machines (torch.cpu has no such function): guard it with "
                "torch.accelerator.is_available()",
                min_torch="2.6",
            )
        return _m(
            "",
            "unsupported",
            f"{self.intro}: dir(torch.accelerator), dir(torch.cpu)",
            f"no device-agnostic equivalent of torch.cuda.{name}",
        )

    def label_changes(self, name: str, mapping: Mapping) -> None:
        """Adds "changes" (the fix changes behaviour: an unsafe fix) to a mapping that replaces a
        value by a constant or widens an RNG call to torch's CPU-and-devices functions."""
        value = mapping.get("without_device", "")
        if value and value != "None" and name not in self.overrides["cpu_no_accelerator"]["names"]:
            group = "host_values" if name in self.overrides["host_values"]["names"] else "without_device"
            mapping["changes"] = self.overrides[group]["changes"]
            if mapping["source"] == self.overrides["mps_values"]["source"]:
                mapping["changes"] = self.overrides["mps_values"]["changes"]
        rng = self.overrides["torch_level_rng"]
        if name in rng["changes"] and mapping["replacement"] == rng["names"][name][0]:
            mapping["changes"] = rng["changes"][name]

    def as_divisor(self, name: str, targets: dict[str, Mapping]) -> None:
        """Adds "as_divisor" (what a call becomes where its value divides: a count that cannot be 0
        there) to the targets where the call can give 0: cpu, and accelerator on CPU-only hosts."""
        cd = self.overrides["count_as_divisor"]
        for target, (value, note) in cd["names"].get(name, {}).items():
            mapping = targets[target]
            mapping["as_divisor"] = value
            mapping["as_divisor_note"] = note
            mapping["source"] += f"; {cd['source']}"

    def refused_keywords(self, obj: Any, targets: dict[str, Mapping]) -> None:
        """Adds "refused_keywords" to each in-tree target's mapping whose replacement (a torch name,
        introspected here) lacks a keyword that the CUDA API `obj` takes: a call passing it is
        reported instead of rewritten (issue 21 §4)."""

        def accepted(fn: Any) -> Optional[tuple[set[str], bool]]:
            try:
                sig = inspect.signature(fn)
            except (TypeError, ValueError):
                return None
            ps = [p for p in sig.parameters.values() if p.name != "self"]
            kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
            return {p.name for p in ps if p.kind in kinds}, any(p.kind == p.VAR_KEYWORD for p in ps)

        src = accepted(obj)
        if not src:
            return
        for t in ("cpu", "xpu", "mps", "accelerator"):
            m = targets.get(t, {})
            repl = m.get("replacement", "")
            if not repl.startswith("torch.") or "(" in repl or m.get("status") == "unsupported":
                continue
            dst_obj: Any = self.torch
            for part in repl.split(".")[1:]:
                dst_obj = getattr(dst_obj, part, None)
            dst = accepted(dst_obj) if dst_obj is not None else None
            if not dst or dst[1]:
                continue
            missing = sorted(src[0] - dst[0])
            if missing:
                m["refused_keywords"] = missing
                m["source"] += f"; {self.intro}: inspect.signature({repl}) lacks {', '.join(missing)}"

    # -- entries -----------------------------------------------------------------------------

    def cuda_entry(self, name: str) -> dict[str, Any]:
        qual = f"torch.cuda.{name}"
        obj = getattr(self.torch.cuda, name)
        kind = "module" if isinstance(obj, type(sys)) else ("class" if isinstance(obj, type) else "function")
        if kind == "function" and not callable(obj):
            kind = "attribute"
        targets = {
            "npu": self.npu(name, qual),
            "mlu": self.mlu(name, qual),
            "musa": self.unverified("musa", name),
            "xpu": self.xpu(name),
            "mps": self.mps(name),
            "hpu": self.unverified("hpu", name),
            "cpu": self.cpu(name),
            "accelerator": self.accelerator(name),
        }
        for mapping in targets.values():
            self.label_changes(name, mapping)
        self.as_divisor(name, targets)
        self.refused_keywords(obj, targets)
        if name.startswith("Double"):  # float64 tensor types: not supported where float64 is lacking
            doc = json.loads((ROOT / "data/targets.json").read_text())
            for t in doc["targets"]:
                if "float64" in t.get("no_dtypes", []) and t["name"] in targets:
                    targets[t["name"]] = _m(
                        "",
                        "unsupported",
                        t["facts"]["no_dtypes"],  # the fact's own source (data/targets.json no_dtypes)
                        f"{t['name']} has no float64: use float32 on the device, or keep it on the CPU",
                    )
        return {
            "api": qual,
            "kind": kind,
            "family": _family(name),
            "summary": _summary(obj),
            "targets": targets,
        }

    def amp_entry(self, name: str, targets: list[dict[str, Any]]) -> dict[str, Any]:
        qual = f"torch.cuda.amp.{name}"
        amp = self.overrides["amp"]
        repl, how = amp["names"][name]
        obj = getattr(self.torch.cuda.amp, name)
        out: dict[str, Mapping] = {}
        for t in targets:
            dev = t["amp_device"]
            if t["name"] == "accelerator":
                note = how.replace(
                    "'{amp_device}'", "the device type of torch.accelerator.current_accelerator()"
                )
                out[t["name"]] = _m(repl, "supported", amp["source"], note + " (or 'cpu' without one)", "2.6")
            elif t["name"] == "musa":
                out[t["name"]] = _m(
                    repl,
                    "unknown",
                    amp["source"],
                    how.replace("{amp_device}", dev)
                    + "; no upstream list says torch_musa registers autocast",
                )
            else:
                out[t["name"]] = _m(repl, "supported", amp["source"], how.replace("{amp_device}", dev))
        npu_q = self.ascend["2.8"][0]
        if qual in npu_q:
            out["npu"]["source"] += "; upstream ascend-msfmktransplt/supported_op_2_8.json lists " + qual
        mlu = self.mlu_yaml.get(qual)
        if mlu and mlu.get("limitations"):
            out["mlu"]["source"] += (
                "; upstream cambricon-torch_mlu/torch_api.yaml: " + mlu["limitations"].strip()
            )
        kind = "class" if isinstance(obj, type) else "function"
        return {"api": qual, "kind": kind, "family": "amp", "summary": _summary(obj), "targets": out}

    def nvtx_entry(self, name: str) -> dict[str, Any]:
        qual = f"torch.cuda.nvtx.{name}"
        out = {
            "npu": self.npu_nvtx(name),
            "mlu": _m(
                f"torch.mlu.cnpx.{name}",
                "partial",
                "shared/reference/peer-migration-tools.md 3.1 (torch.cuda.nvtx -> torch.mlu.cnpx)",
                "CNPX is Cambricon's NVTX equivalent",
            ),
            "musa": _m("", "unknown", "no upstream data", "no NVTX equivalent is documented for MUSA"),
            "xpu": _m("", "unsupported", f"{self.intro}: dir(torch.xpu)", "torch.xpu has no nvtx"),
            "mps": _m(
                "", "unsupported", f"{self.intro}: dir(torch.mps)", "use torch.mps.profiler signposts instead"
            ),
            "hpu": _m("", "unknown", "no upstream data", "no NVTX equivalent is documented for HPU"),
            "cpu": _m(
                "",
                "unsupported",
                f"{self.intro}: dir(torch.cpu)",
                "NVTX ranges only annotate CUDA timelines: use torch.profiler.record_function",
            ),
            "accelerator": _m(
                "torch.profiler.record_function",
                "partial",
                f"{self.intro}: torch.profiler",
                "record_function marks a range in any torch.profiler trace (a context manager, not push/pop)",
            )
            if name == "range"
            else _m(
                "",
                "unsupported",
                f"{self.intro}: torch.profiler.record_function(name) is a context manager; "
                "torch.cuda.nvtx.range_push raises 'NVTX functions not installed' without CUDA",
                "push/pop/mark have no device-agnostic form: wrap the range in "
                "`with torch.profiler.record_function(name):` by hand",
            ),
        }
        obj = getattr(self.torch.cuda.nvtx, name)
        self.refused_keywords(obj, out)
        return {"api": qual, "kind": "function", "family": "nvtx", "summary": _summary(obj), "targets": out}

    def npu_nvtx(self, name: str) -> Mapping:
        return _m(
            "",
            "unsupported",
            "upstream ascend-torch_npu/torch_npu.npu.__all__.txt",
            "torch_npu.npu has no nvtx (mstx is Ascend's marker API, with another interface)",
        )

    def catalogue(self) -> dict[str, Any]:
        targets = json.loads((ROOT / "data/targets.json").read_text())["targets"]
        entries = [self.cuda_entry(n) for n in sorted(_public(self.torch.cuda))]
        entries += [
            self.amp_entry(n, targets) for n in ("GradScaler", "autocast", "custom_bwd", "custom_fwd")
        ]
        entries += [self.nvtx_entry(n) for n in ("mark", "range", "range_pop", "range_push")]
        return {
            "about": "GENERATED by tools/gen_catalogue.py from shared/upstream, "
            "data/sources/torch_cuda_overrides.json and the installed torch: do not edit.",
            "torch": self.tv,
            "entries": entries,
        }

    def npu_support(self) -> dict[str, Any]:
        versions = {}
        for ver, (sup, uns) in self.ascend.items():
            versions[ver] = {"supported": sorted(sup), "unsupported": dict(sorted(uns.items()))}
        return {
            "about": "GENERATED by tools/gen_catalogue.py: do not edit.",
            "target": "npu",
            "source": "upstream ascend-msfmktransplt/supported_op_<v>.json and op_list_<v>.json "
            "(Ascend/mstt 99c2e0f9)",
            "judge_prefix": "torch.",
            "versions": versions,
        }

    def mlu_support(self) -> dict[str, Any]:
        sup, part, uns = [], {}, {}
        for api, item in sorted(self.mlu_yaml.items()):
            lim = (item.get("limitations") or "").strip()
            if not item.get("supported"):
                uns[api] = lim or "-"
            elif lim:
                part[api] = lim
            else:
                sup.append(api)
        return {
            "about": "GENERATED by tools/gen_catalogue.py: do not edit.",
            "target": "mlu",
            "source": "upstream cambricon-torch_mlu/torch_api.yaml "
            "(Cambricon/torch_mlu 9e95f972, r2.4_develop)",
            "judge_prefix": "",
            "versions": {"2.4": {"supported": sup, "partial": part, "unsupported": uns}},
        }


def _dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--upstream", type=Path, default=DEFAULT_UPSTREAM)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    if importlib.util.find_spec("torch") is None:
        print("gen_catalogue: torch is not installed", file=sys.stderr)
        return 2
    gen = Generator(args.upstream)
    outputs = {
        ROOT / "data/catalogue/torch_cuda.json": _dump(gen.catalogue()),
        ROOT / "data/catalogue/support/npu.json": _dump(gen.npu_support()),
        ROOT / "data/catalogue/support/mlu.json": _dump(gen.mlu_support()),
    }
    stale = 0
    for path, text in outputs.items():
        old = path.read_text() if path.exists() else ""
        if old == text:
            continue
        if args.check:
            stale += 1
            diff = difflib.unified_diff(
                old.splitlines(), text.splitlines(), str(path), "regenerated", lineterm=""
            )
            print("\n".join(list(diff)[:60]))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(text)
            tmp.replace(path)
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"{stale} generated file(s) are stale: run tools/gen_catalogue.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
