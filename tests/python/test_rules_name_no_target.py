"""No rule names a target (issue 32): what differs between targets is data (data/targets.json,
the catalogue), so a rule never tests the target's name or looks up a mapping by a target's name.
Comments, and the device type "cpu" that user code compares with, are not target names."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TARGETS = [t["name"] for t in json.loads((REPO / "data" / "targets.json").read_text())["targets"]]


def code_lines(path: Path) -> list[tuple[int, str]]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        code = line.split("//", 1)[0]
        if code.strip():
            out.append((n, code))
    return out


def test_no_rule_tests_a_target_name() -> None:
    names = "|".join(TARGETS)
    patterns = [
        # target.name == "npu", t != "mps" (t bound to the target's name)
        re.compile(r'(target\.name|\bt)\s*[!=]=\s*"(' + names + ')"'),
        # ctx.cat.lookup(api, "cpu"): another target's mapping by its name
        re.compile(r'lookup\([^)]*,\s*"(' + names + r')"\)'),
    ]
    found = []
    for path in sorted((REPO / "src" / "torchport" / "rules").glob("*.cc")):
        if path.name.endswith("_test.cc"):
            continue
        for n, code in code_lines(path):
            if any(p.search(code) for p in patterns):
                found.append(f"{path.relative_to(REPO)}:{n}: {code.strip()}")
    assert found == [], "\n".join(found)


def test_the_check_sees_a_target_name() -> None:
    """The patterns catch the forms the rules used before (so the test above can fail)."""
    names = "|".join(TARGETS)
    p = re.compile(r'(target\.name|\bt)\s*[!=]=\s*"(' + names + ')"')
    assert p.search('  if (ctx.target.name == "cpu") {')
    assert p.search('  if (t != "cpu" && t != "mps") {')
    assert not p.search('  if (!other || other->value != "cpu") return false;')


# A target's name as a string literal in a rule's code, where a rule would test it or pick
# something by it. "cpu" is not checked: it is also the CPU's device type, which the rules compare
# the script's own strings with (`device == "cpu"`) and write for the accelerator's CPU fallback.
# The one other literal allowed is idiom.cc's list of the device flags a script's command line
# defines (`--no-mps`, `--xpu`): the user's flags, not the target.
ALLOWED_LITERALS = {("idiom.cc", 'for (std::string_view dev : {"cuda", "mps", "xpu"}) {')}


def test_no_rule_has_a_target_name_literal() -> None:
    names = "|".join(t for t in TARGETS if t != "cpu")
    literal = re.compile(r'"(' + names + r')"')
    found = []
    for path in sorted((REPO / "src" / "torchport" / "rules").glob("*")):
        # test code (the tests and their shared helpers, *_test_util.h) names targets to test them
        if path.suffix not in (".cc", ".h") or path.name.endswith(("_test.cc", "_test_util.h")):
            continue
        for n, code in code_lines(path):
            if literal.search(code) and (path.name, code.strip()) not in ALLOWED_LITERALS:
                found.append(f"{path.relative_to(REPO)}:{n}: {code.strip()}")
    assert found == [], "a target difference is data (data/targets.json):\n" + "\n".join(found)


def test_the_literal_check_sees_a_target_name() -> None:
    names = "|".join(t for t in TARGETS if t != "cpu")
    literal = re.compile(r'"(' + names + r')"')
    assert literal.search('  const bool one_device = ctx.target.device == "mps";')
    assert literal.search('  if (backend == "npu") return;')
    assert not literal.search('  if (!ov || ov->value != "cpu") return std::nullopt;')
