"""Per-target facts for `torchport run`, `import torchport.auto`, check-ops and probe, read from data/.

data/targets.json is the one source of per-target facts for both halves of torchport: the C++ core compiles
it in (cmake/embed_data.cmake) and this module reads it. The environment-variable renames come from
data/catalogue/environment.json, the file the C++ rule TP500 reads. Every fact names its source in
`Target.sources` (field name -> source); a source that starts with "unverified:" has no upstream file or
vendor document behind it, and `Target.unverified` lists those fields. tests/python/test_shared_facts.py
compares every fact with what the C++ core reports.

The data directory is, in order: $TORCHPORT_DATA_DIR (a test-only or user override, also read by the C++
core), torchport/data inside the installed package (the wheel ships it), data/ of a source checkout.

Importing this module costs nothing: it imports neither torch nor any vendor package. Names here are shared
API (check-ops imports them): only add, never rename.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

__all__ = [
    "CUDA_ENV_VARS",
    "MIGRATION_TARGETS",
    "TARGETS",
    "TARGET_NAMES",
    "Target",
    "TargetUnavailable",
    "data_dir",
    "get_target",
    "missing_package_message",
    "target_hint",
    "unknown_target",
    "vendor_package_missing",
]

UNVERIFIED = "unverified:"

# Python field name -> the field of data/targets.json it comes from.
FIELD_OF = {
    "device_type": "device",
    "device_module": "module",
    "vendor_package": "package",
    "install_hint": "install",
    "requirement": "requirement",
    "backend": "backend",
    "visible_devices_env": "visible_devices",
    "amp_device_type": "amp_device",
    "amp_dtype": "amp_dtype",
    "float64": "no_dtypes",
    "no_dtypes": "no_dtypes",
    "fallback_env": "fallback",
    "fallback_env_value": "fallback",
    "fallback_default": "fallback",
    "profiler_activity": "profiler_activity",
    "has_device_index": "device_index",
    "cpu_shallow_copy": "cpu_shallow_copy",
    "print_on_host": "print_on_host",
    "flex_attention": "flex_attention",
    "device_capability_env": "device_capability_env",
}


@dataclass(frozen=True)
class Target:
    """What one target needs and what a CUDA concept becomes on it."""

    name: str  # the `--target` value
    title: str  # human name
    device_type: str  # the torch device string ("npu" in torch.device("npu:0"))
    device_module: str  # the device module ("torch_npu.npu", "torch.xpu")
    vendor_package: Optional[str]  # import name of the out-of-tree package, None when in-tree
    install_hint: str  # what to install, shown when the package is missing
    backend: str  # collective backend that replaces nccl
    visible_devices_env: tuple[str, ...]  # the target's visible-devices variable(s)
    env_map: Mapping[str, str]  # CUDA variable -> the target's variable with the same job
    env_prefix_map: Mapping[str, str]  # CUDA variable prefix -> target prefix (TORCH_NCCL_ -> TORCH_CNCL_)
    amp_device_type: str  # device_type for torch.autocast / torch.amp.GradScaler
    float64: bool  # False: the device has no float64 (warn per call site; fail with --strict)
    fallback_env: Optional[str]  # variable that controls the CPU fallback of unsupported ops
    fallback_env_note: str  # what values of fallback_env mean
    profiler_activity: Optional[str]  # torch.profiler.ProfilerActivity member for the device, None: none
    has_device_index: bool  # False: one device only, "cuda:N" collapses to the one device
    sources: Mapping[str, str] = field(default_factory=dict)
    amp_dtype: str = ""  # autocast's default dtype on the device ("float16", "bfloat16")
    no_dtypes: tuple[str, ...] = ()  # dtypes the device lacks
    fallback_default: str = ""  # "cpu": unsupported ops fall back by default; "error": they raise
    import_stmt: str = ""  # the statement `migrate` inserts ("import torch_npu"), "" when in-tree
    # the requirement `migrate` adds to requirements*.txt / pyproject.toml where the output imports the vendor
    # package ("torch_npu"; a version only where a source pairs one with torch), "" when none is known
    requirement: str = ""
    host: bool = False  # the device is the host CPU itself
    unverified: tuple[str, ...] = ()  # facts (data field names) whose source is marked unverified
    # CUDA variable (or "PREFIX*") -> why its rename is not an exact equivalent (catalogue status partial or
    # unknown): the runtime logs such a rename as modified, not match.
    env_notes: Mapping[str, str] = field(default_factory=dict)
    # The vendor registers aten::_has_compatible_shallow_copy_type so that a CPU tensor and a device tensor
    # are compatible: Module.to(device) keeps each Parameter (`param.data = ...`), so tied weights stay tied.
    # Torch's own answer for a PrivateUse1 device is no (a new Parameter per module). `torchport rehearse`
    # follows it.
    cpu_shallow_copy: bool = False
    # The vendor formats a device tensor from a CPU copy when it is printed (no device op runs).
    print_on_host: bool = False
    # Importing the vendor package lets eager FlexAttention (torch.nn.attention.flex_attention) run on the
    # device, which torch's own device check refuses for a PrivateUse1 device, and registers autocast kernels
    # for its higher-order operators. `torchport rehearse` does the same.
    flex_attention: bool = False
    # The vendor's get_device_capability() returns None unless this variable is set to "major.minor" (then
    # that tuple); "" when the vendor answers a tuple. `torchport rehearse` answers as the vendor does.
    device_capability_env: str = ""
    # The value of fallback_env that data/targets.json names ("1" of TORCH_NPU_FALLBACK_CPU_DISABLE=1): the
    # setting that reverses fallback_default (every CPU fallback an error, or a CPU fallback for every op).
    fallback_env_value: str = ""

    @property
    def in_tree(self) -> bool:
        """True when torch itself provides the device (no vendor package)."""
        return self.vendor_package is None


def data_dir() -> Path:
    """The directory that holds targets.json (see the module docstring for the order)."""
    env = os.environ.get("TORCHPORT_DATA_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    packaged = here / "data"
    if (packaged / "targets.json").is_file():
        return packaged
    return here.parents[1] / "data"


def _read(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise RuntimeError(f"torchport: cannot read the knowledge base {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise RuntimeError(f"{path}:{e.lineno}:{e.colno}: {e.msg}") from None


def _expand(text: str, t: Mapping[str, Any]) -> str:
    for key in ("device", "module", "backend", "visible_devices", "amp_device"):
        text = text.replace("{" + key + "}", str(t.get(key, "")))
    return text


def _env_maps(
    entries: list[dict[str, Any]], t: Mapping[str, Any]
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """CUDA variable -> the target's, prefix -> prefix, and the notes of inexact renames, resolved as the
    C++ catalogue does ("*" too)."""
    env: dict[str, str] = {}
    prefix: dict[str, str] = {}
    notes: dict[str, str] = {}
    for e in entries:
        m = e["targets"].get(t["name"]) or e["targets"].get("*")
        if not m:
            continue
        repl = _expand(m.get("replacement", ""), t)
        if not repl:
            continue
        api: str = e["api"]
        if m.get("status") != "supported":
            notes[api] = _expand(m.get("note", ""), t) or f"{m.get('status')}: {m.get('source', '')}"
        if api.endswith("*") and repl.endswith("*"):
            prefix[api[:-1]] = repl[:-1]
        else:
            env[api] = repl
    return env, prefix, notes


def _target(t: Mapping[str, Any], env_entries: list[dict[str, Any]]) -> Target:
    facts: dict[str, str] = dict(t.get("facts", {}))
    env_map, env_prefix, env_notes = _env_maps(env_entries, t)
    fb = t.get("fallback", {})
    fb_env = fb.get("env", "")
    sources = dict(facts)
    sources.update({py: facts[data] for py, data in FIELD_OF.items() if data in facts})
    sources["env_map"] = sources["env_prefix_map"] = (
        "data/catalogue/environment.json (each mapping names its source)"
    )
    return Target(
        name=t["name"],
        title=t.get("title", t["name"]),
        device_type=t["device"],
        device_module=t["module"],
        vendor_package=t.get("package") or None,
        install_hint=t["install"],
        backend=t["backend"],
        visible_devices_env=(t["visible_devices"],) if t.get("visible_devices") else (),
        env_map=env_map,
        env_prefix_map=env_prefix,
        amp_device_type=t.get("amp_device") or t["device"],
        float64="float64" not in t.get("no_dtypes", []),
        fallback_env=fb_env.split("=")[0] or None,
        fallback_env_note=f"{fb_env} {fb.get('env_effect', '')}".strip() if fb_env else fb.get("note", ""),
        profiler_activity=t.get("profiler_activity") or None,
        has_device_index=bool(t.get("device_index", True)),
        sources=sources,
        amp_dtype=t.get("amp_dtype", ""),
        no_dtypes=tuple(t.get("no_dtypes", [])),
        fallback_default=fb.get("default", ""),
        import_stmt=t.get("import", ""),
        requirement=t.get("requirement", ""),
        host=bool(t.get("host", False)),
        unverified=tuple(k for k, v in facts.items() if v.startswith(UNVERIFIED)),
        env_notes=env_notes,
        cpu_shallow_copy=bool(t.get("cpu_shallow_copy", False)),
        print_on_host=bool(t.get("print_on_host", False)),
        flex_attention=bool(t.get("flex_attention", False)),
        device_capability_env=str(t.get("device_capability_env", "")),
        fallback_env_value=fb_env.partition("=")[2],
    )


def _load(root: Path) -> tuple[dict[str, Target], tuple[str, ...], str, tuple[str, ...]]:
    doc = _read(root / "targets.json")
    env_path = root / "catalogue" / "environment.json"
    env_entries = _read(env_path)["entries"] if env_path.is_file() else []
    # The runtime needs a device string: "accelerator" (device chosen at run time) is `--target auto` here.
    targets = {t["name"]: _target(t, env_entries) for t in doc["targets"] if t.get("device")}
    cuda_amp_dtype = str(doc.get("cuda", {}).get("amp_dtype", ""))
    names = tuple(t["name"] for t in doc["targets"])
    return targets, tuple(doc.get("cuda_env_vars", {}).get("names", ())), cuda_amp_dtype, names


TARGETS: dict[str, Target]
# CUDA / NCCL environment variables a CUDA script or launcher commonly sets. When one is set and the target
# has no equivalent in `Target.env_map`, `torchport run` warns that it is ignored (data/targets.json
# "cuda_env_vars", with its source).
CUDA_ENV_VARS: tuple[str, ...]
# CUDA's autocast default dtype ("float16"; data/targets.json "cuda", with its source): torch.autocast("cuda")
# without dtype= computes in it, and the target's own default may differ (bfloat16 on cpu and hpu).
CUDA_AMP_DTYPE: str
# Every target of data/targets.json, in its order, the device-agnostic "accelerator" included: the `--target`
# values of analyze, migrate and verify.
MIGRATION_TARGETS: tuple[str, ...]
TARGETS, CUDA_ENV_VARS, CUDA_AMP_DTYPE, MIGRATION_TARGETS = _load(data_dir())

TARGET_NAMES: tuple[str, ...] = tuple(TARGETS) + ("auto",)


def target_hint(word: str, choices: Sequence[str]) -> str:
    """ ": did you mean npu (Huawei Ascend NPU)?" when `word` is a whole word of a target's vendor or title in
    data/targets.json (ascend, gaudi, intel, apple, ...) and that target is one of `choices`; "" otherwise.
    The C++ core gives analyze and migrate the same hint from the same fields."""
    lower = word.lower()
    if len(lower) < 3:
        return ""
    meant = []
    for t in _read(data_dir() / "targets.json")["targets"]:
        words = re.sub(r"[^0-9a-z]+", " ", f"{t.get('vendor', '')} {t.get('title', '')}".lower()).split()
        if lower in words and t["name"] in choices:
            meant.append(f"{t['name']} ({t.get('title', t['name'])})")
    return f": did you mean {' or '.join(meant)}?" if meant else ""


def unknown_target(name: str, choices: Sequence[str]) -> str:
    """The message for a --target value that is not one of `choices`, with target_hint's suggestion."""
    hint = target_hint(name, choices)
    if hint:
        return f"unknown target {name!r}{hint} (choose one of: {', '.join(choices)})"
    return f"unknown target {name!r}; choose one of: {', '.join(choices)}"


class TargetUnavailable(Exception):
    """The target cannot run here: its package is missing or its device is absent. The message says why."""


def get_target(name: str) -> Target:
    """The Target called `name` (not "auto": see torchport.runtime.resolve_target). Raises KeyError."""
    try:
        return TARGETS[name]
    except KeyError:
        raise KeyError(unknown_target(name, TARGET_NAMES)) from None


def vendor_package_missing(target: Target) -> bool:
    """True when the target's out-of-tree package is not installed (checked without importing it)."""
    if target.vendor_package is None:
        return False
    top = target.vendor_package.split(".")[0]
    try:
        return importlib.util.find_spec(top) is None
    except (ImportError, ValueError):
        return True


def missing_package_message(target: Target) -> str:
    """One clear sentence naming what to install for `target`."""
    return (
        f"target {target.name} ({target.title}) needs the Python package {target.vendor_package!r}, "
        f"which is not installed: {target.install_hint}"
    )
