"""The references that stay in a migrated file on purpose: the catalogue's "kept as is" entries.

A CUDA API whose mapping for a target is the API itself (data/catalogue/*.json, `replacement`
equal to `api`; the mapping's `note` says why, e.g. "without cuDNN the flag has no effect") is
left in the output by design. The corpus suite's `unfixed` column counts every other reference
left in the output; docs/fidelity.md lists these entries (`python -m tests.corpus --kept`).

A string the oracle names by its keyword (`device_types="cuda"` of torch.library.custom_op) is
kept when the catalogue has that keyword and value as an entry kept as is.

A comparison with "cuda" (the oracle's device-compare) is kept on a target whose catalogue has
the entry `comparison with "cuda"` kept as is (cpu: false there, as on a machine without CUDA).

An import of a CUDA module counts as kept when the catalogue keeps something under it and every
other reference to the module in the same file is kept: it is there for those uses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from . import oracle

CATALOGUE = Path(__file__).resolve().parents[2] / "data" / "catalogue"
COMPARISON = 'comparison with "cuda"'  # the catalogue entry of the device-compare references


@dataclass(frozen=True)
class Kept:
    api: str
    target: str  # "*" for every target not named
    note: str
    source: str


@cache
def entries() -> tuple[Kept, ...]:
    out: list[Kept] = []
    for path in sorted(CATALOGUE.glob("*.json")):
        data = json.loads(path.read_text())
        for e in data.get("entries", []) if isinstance(data, dict) else []:
            api = e.get("api", "")
            for t, m in (e.get("targets") or {}).items():
                if isinstance(m, dict) and api and m.get("replacement") == api:
                    out.append(Kept(api, t, m.get("note", ""), m.get("source", "")))
    return tuple(out)


@cache
def kept_apis(target: str) -> frozenset[str]:
    """The APIs the catalogue keeps as they are on `target`."""
    named: dict[str, bool] = {}
    for path in sorted(CATALOGUE.glob("*.json")):
        data = json.loads(path.read_text())
        for e in data.get("entries", []) if isinstance(data, dict) else []:
            api, targets = e.get("api", ""), e.get("targets") or {}
            m = targets.get(target, targets.get("*"))
            if api and isinstance(m, dict):
                named[api] = m.get("replacement") == api
    return frozenset(a for a, k in named.items() if k)


def _under(q: str, module: str) -> bool:
    return q == module or q.startswith(module + ".")


def unfixed(refs: list[oracle.Reference], target: str) -> list[oracle.Reference]:
    """The references of one output file that are not kept on purpose."""
    kept = kept_apis(target)
    api_refs = [r for r in refs if r.kind == "cuda-api" and r.qualified]

    def kept_api(r: oracle.Reference) -> bool:
        return r.qualified in kept

    def kept_import(r: oracle.Reference) -> bool:
        if not r.text.startswith(("import ", "from ")):
            return False
        mod = r.qualified
        if not any(_under(k, mod) for k in kept):
            return False
        others = [o for o in api_refs if o is not r and _under(o.qualified, mod)]
        return all(kept_api(o) for o in others if not o.text.startswith(("import ", "from ")))

    def is_kept(r: oracle.Reference) -> bool:
        if not r.qualified:
            return False
        if r.kind == "cuda-api":
            return kept_api(r) or kept_import(r)
        # device_types="cuda"; "cuda" beside "rocm" (a GPU platform)
        return r.kind in ("device-string", "device-compare") and kept_api(r)

    def kept_comparison(r: oracle.Reference) -> bool:
        return r.kind == "device-compare" and COMPARISON in kept

    return [r for r in refs if not (is_kept(r) or kept_comparison(r))]
