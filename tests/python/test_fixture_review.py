"""Every expected file of the rule fixtures has been reviewed (issue 32 §4): its bytes are listed in
tests/fixtures/rules/REVIEWED (tools/review_fixture.py). An expectation written, or changed, without
that step fails here, so output pasted from the tool cannot pass unseen."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tools_testlib import load_tool

REPO = Path(__file__).resolve().parents[2]


def load() -> ModuleType:
    return load_tool("review_fixture")


def test_every_expected_file_is_reviewed_as_it_is() -> None:
    rf = load()
    reviewed = rf.read_reviewed()
    problems = []
    for f in rf.all_expected():
        rel = f.relative_to(rf.FIXTURES).as_posix()
        if rel not in reviewed:
            problems.append(f"{rel}: not reviewed")
        elif reviewed[rel] != rf.digest(f):
            problems.append(f"{rel}: changed since its review")
    assert problems == [], (
        "read these expectations, then run `python tools/review_fixture.py CASE --accept`:\n"
        + "\n".join(problems)
    )


def test_the_list_names_only_files_that_exist() -> None:
    rf = load()
    present = {f.relative_to(rf.FIXTURES).as_posix() for f in rf.all_expected()}
    assert set(rf.read_reviewed()) - present == set()


def test_an_edited_expectation_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check sees a changed byte: a fixture accepted, then edited, is no longer reviewed."""
    rf = load()
    case = tmp_path / "rules" / "demo"
    case.mkdir(parents=True)
    (case / "input.py").write_text("import torch\n")
    (case / "npu.options").write_text("specify_device\n")
    (case / "npu.py").write_text("import torch\nimport torch_npu\n")
    (case / "npu.findings").write_text("TP900 2:1 INSERT import torch_npu | insert import torch_npu\n")
    monkeypatch.setattr(rf, "FIXTURES", tmp_path / "rules")
    monkeypatch.setattr(rf, "REVIEWED", tmp_path / "rules" / "REVIEWED")
    assert [p.name for p in rf.all_expected()] == ["npu.findings", "npu.py"]
    assert rf.main(["demo", "--accept"]) == 0
    assert set(rf.read_reviewed()) == {"demo/npu.findings", "demo/npu.py"}
    (case / "npu.findings").write_text(
        "TP900 2:1 INSERT import torch_npu | insert import torch_npu\nTP100 3:1 MODIFY x | change x\n"
    )
    reviewed = rf.read_reviewed()
    assert reviewed["demo/npu.findings"] != rf.digest(case / "npu.findings")
    assert reviewed["demo/npu.py"] == rf.digest(case / "npu.py")
