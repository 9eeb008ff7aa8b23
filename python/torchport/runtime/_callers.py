"""Who sees the truth about CUDA: the caller rules of data/runtime/callers.json.

`torch.cuda.is_available()`, `device_count()`, `Tensor.is_cuda`, the device-property questions and
`is_nccl_available()` answer either the truth (the real CUDA answer) or for the target, depending on
`--cuda-available` and on who asks. torch's own internals (dynamo, inductor, fake tensors) always get the
truth,
so torch.compile works whatever the mode says; libraries named in the data (transformers, accelerate, ...) get
the truth while their device-detection functions run, as transfer_to_npu's apis_config.json does.

A decision costs one frame lookup and one dict lookup per asking code object (cached); the `during` rules walk
at most MAX_DEPTH frames up the stack, only when the data has such rules and the mode is not `truth`.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from pathlib import Path
from typing import Any, Optional

MAX_DEPTH = 24
_PKG = Path(__file__).resolve().parents[1]  # .../torchport


def data_path(name: str) -> Path:
    """data/runtime/<name>: in an installed wheel (torchport/data/runtime) or a source checkout."""
    candidates = (_PKG / "data" / "runtime" / name, _PKG.parent.parent / "data" / "runtime" / name)
    for p in candidates:
        if p.is_file():
            return p
    raise FileNotFoundError(f"torchport: {name} not found (looked in {', '.join(map(str, candidates))})")


def load_rules() -> dict[str, Any]:
    with open(data_path("callers.json"), encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def _library_prefixes() -> tuple[str, ...]:
    paths = {sysconfig.get_paths().get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths |= {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    return tuple(sorted(os.path.abspath(p) + os.sep for p in paths if p))


def _matches(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


class CallerPolicy:
    def __init__(self, mode: str, target: str, data: Optional[dict[str, Any]] = None) -> None:
        data = load_rules() if data is None else data
        self.mode = mode
        rules = [r for r in data["rules"] if target in r.get("targets", (target,))]
        self.caller_rules = [r for r in rules if r.get("scope", "caller") == "caller"]
        self.during: dict[str, dict[str, Any]] = {r["caller"]: r for r in rules if r.get("scope") == "during"}
        self.questions = tuple(data.get("questions", ()))
        self.libs = _library_prefixes()
        self._by_code: dict[
            Any, Optional[bool]
        ] = {}  # code -> caller rule says truth (True) / no rule (None)
        self._during_code: dict[Any, bool] = {}  # code -> is a `during` function

    @staticmethod
    def _qualified(frame: Any) -> tuple[str, str]:
        code = frame.f_code
        module = frame.f_globals.get("__name__", "") or ""
        return module, f"{module}.{getattr(code, 'co_qualname', code.co_name)}"

    def _caller_rule(self, frame: Any) -> Optional[str]:
        """What the first caller rule matching the asking frame's module says ("truth", "user", "mode"), or
        None when no rule names it (cached per code object)."""
        code = frame.f_code
        r = self._by_code.get(code, 0)
        if r == 0:
            module, _ = self._qualified(frame)
            r = None
            for rule in self.caller_rules:
                if _matches(module, rule["caller"]):
                    r = rule["sees"]
                    break
            self._by_code[code] = r
        return r  # type: ignore[return-value]

    def _inside_during(self, frame: Any) -> bool:
        if not self.during:
            return False
        f = frame
        for _ in range(MAX_DEPTH):
            if f is None:
                return False
            code = f.f_code
            hit = self._during_code.get(code)
            if hit is None:
                _, qual = self._qualified(f)
                hit = qual in self.during
                self._during_code[code] = hit
            if hit:
                return True
            f = f.f_back
        return False

    def truth_forced(self, depth: int) -> bool:
        """True when the caller `depth` frames above the caller of this method must see the truth whatever
        the mode (torch internals, the data's `during` functions)."""
        frame = sys._getframe(depth + 1)
        if self._caller_rule(frame) == "truth":
            return True
        return self.mode != "truth" and self._inside_during(frame)

    def sees_target(self, depth: int) -> bool:
        """Whether is_available()/device_count()/Tensor.is_cuda answer for the target (True) or tell the truth
        (False) to the caller `depth` frames above the caller of this method."""
        mode = self.mode
        if mode == "truth":
            return False
        frame = sys._getframe(depth + 1)
        rule = self._caller_rule(frame)
        if rule == "truth" or self._inside_during(frame):
            return False
        if mode == "target" or rule == "user":  # "user": answered as the user's own code is
            return True
        return not os.path.abspath(frame.f_code.co_filename).startswith(self.libs)
