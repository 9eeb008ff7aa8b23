"""Every catalogue mapping to an in-tree target (cpu, xpu, mps, accelerator) checked against the signatures of
the installed torch: each keyword the CUDA API accepts must be accepted by its replacement, or the rewrite
of a call that passes it breaks (`torch.cuda.Stream(device=d)` -> `torch.cpu.Stream(device=d)`
(a TypeError).

The catalogue lists the mismatches as each mapping's refused_keywords (tools/gen_catalogue.py), and the rules
report a call that passes one instead of rewriting it (issue 21 §4; the TP100 fixture refused_keywords). This
test finds the mismatches again with its own introspection: a new or a fixed one that the data does not
list fails it."""

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


def refused_in_data() -> dict[tuple[str, str], list[str]]:
    """The catalogue's refused_keywords (tools/gen_catalogue.py writes them from its own
    introspection), per (API, target)."""
    out: dict[tuple[str, str], list[str]] = {}
    for f in sorted((REPO / "data" / "catalogue").glob("*.json")):
        for e in json.loads(f.read_text())["entries"]:
            for t, m in e["targets"].items():
                if m.get("refused_keywords"):
                    out[(e["api"], t)] = m["refused_keywords"]
    return out


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
    # Torch 2.13 has 30 such mismatches (torch.cuda.Stream(device=) -> torch.cpu.Stream, ...).
    assert len(found) >= 20
    assert found == refused_in_data(), f"torch {torch.__version__}: data/ is stale (tools/gen_catalogue.py)"
