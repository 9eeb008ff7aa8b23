"""Every catalogue mapping to an in-tree target (cpu, xpu, mps, accelerator) checked against the signatures of
the installed torch: each keyword the CUDA API accepts must be accepted by its replacement, or the rewrite
of a call that passes it breaks (`torch.cuda.Stream(device=d)` -> `torch.cpu.Stream(device=d)`
(a TypeError).

KNOWN lists the mismatches found in torch 2.13 that the rules do not yet handle call by call (issue 21 §4:
a call passing such a keyword must be reported instead of rewritten). A new mismatch fails this test, and
so does a fixed one that is still listed."""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path
from typing import Any, Optional

import pytest

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
IN_TREE = ("cpu", "xpu", "mps", "accelerator")

KNOWN = {
    ("torch.cuda.CUDAPluggableAllocator", "xpu"): ["path_to_so_file"],
    ("torch.cuda.Event", "xpu"): ["blocking", "external", "interprocess"],
    ("torch.cuda.Event", "mps"): ["blocking", "external", "interprocess"],
    ("torch.cuda.MemPool", "xpu"): ["no_split"],
    ("torch.cuda.Stream", "cpu"): ["device"],
    ("torch.cuda.can_device_access_peer", "xpu"): ["peer_device"],
    ("torch.cuda.current_stream", "accelerator"): ["device"],
    ("torch.cuda.device", "accelerator"): ["device"],
    ("torch.cuda.get_device_capability", "accelerator"): ["device"],
    ("torch.cuda.get_rng_state", "cpu"): ["device"],
    ("torch.cuda.get_rng_state", "accelerator"): ["device"],
    ("torch.cuda.graph", "xpu"): [
        "capture_error_mode",
        "check_input_liveness",
        "cuda_graph",
        "enable_annotations",
    ],
    ("torch.cuda.max_memory_allocated", "accelerator"): ["device"],
    ("torch.cuda.max_memory_reserved", "accelerator"): ["device"],
    ("torch.cuda.mem_get_info", "accelerator"): ["device"],
    ("torch.cuda.memory_allocated", "mps"): ["device"],
    ("torch.cuda.memory_allocated", "accelerator"): ["device"],
    ("torch.cuda.memory_reserved", "mps"): ["device"],
    ("torch.cuda.memory_reserved", "accelerator"): ["device"],
    ("torch.cuda.memory_snapshot", "xpu"): ["include_traces"],
    ("torch.cuda.memory_stats", "accelerator"): ["device"],
    ("torch.cuda.reset_accumulated_memory_stats", "accelerator"): ["device"],
    ("torch.cuda.reset_peak_memory_stats", "accelerator"): ["device"],
    ("torch.cuda.set_device", "accelerator"): ["device"],
    ("torch.cuda.set_per_process_memory_fraction", "mps"): ["device"],
    ("torch.cuda.set_rng_state", "cpu"): ["device"],
    ("torch.cuda.set_rng_state", "accelerator"): ["device"],
    ("torch.cuda.synchronize", "mps"): ["device"],
    ("torch.cuda.synchronize", "accelerator"): ["device"],
    ("torch.cuda.nvtx.range", "accelerator"): ["msg"],
}


def resolve(qualified: str) -> Any:
    parts = qualified.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except Exception:  # noqa: BLE001 - not a module at this depth
            continue
        try:
            for p in parts[i:]:
                obj = getattr(obj, p)
        except AttributeError:
            return None
        return obj
    return None


def keywords(obj: Any) -> Optional[tuple[set[str], bool]]:
    """The keyword names a callable accepts, and whether it takes **kwargs; None without a signature."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    ps = [p for p in sig.parameters.values() if p.name != "self"]
    names = {p.name for p in ps if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return names, any(p.kind == p.VAR_KEYWORD for p in ps)


def test_every_in_tree_mapping_keeps_the_keywords_of_the_cuda_api() -> None:
    found: dict[tuple[str, str], list[str]] = {}
    checked = 0
    for f in sorted((REPO / "data" / "catalogue").glob("*.json")):
        for e in json.loads(f.read_text())["entries"]:
            if e["kind"] not in ("function", "class") or not e["api"].startswith("torch.cuda"):
                continue
            src = keywords(resolve(e["api"])) if resolve(e["api"]) is not None else None
            if not src:
                continue
            for t in IN_TREE:
                m = e["targets"].get(t, {})
                repl = m.get("replacement", "")
                if not repl.startswith("torch.") or "(" in repl or m.get("status") == "unsupported":
                    continue
                dst_obj = resolve(repl)
                assert dst_obj is not None, f"{e['api']} -> {repl} ({t}): the replacement does not exist"
                dst = keywords(dst_obj)
                if not dst:
                    continue
                checked += 1
                missing = sorted(src[0] - dst[0])
                if missing and not dst[1]:
                    found[(e["api"], t)] = missing
    assert checked > 100
    assert found == KNOWN, f"torch {torch.__version__}: new or fixed mismatches"
