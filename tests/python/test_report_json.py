"""report.json format 2 (docs/report-json.md) and its one Python reader, torchport.report_json:
a hand-written report expanded to the exact objects, the errors a damaged report gets, and the
core's report read back against the core's own text findings on a real project."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from torchport import report_json

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cuda_project"

COLUMNS = {
    "files": "file outcome reason python changed not_migrated findings min_torch_version".split(),
    "findings": [
        "file",
        "cell",
        "start_line",
        "end_line",
        "column",
        "operation",
        "code",
        "api",
        "message",
        "applied",
        "applicability",
        "changes",
    ],
    "cuda_ops": ["file", "api"],
    "advice": ["kind", "file", "cell", "start_line", "end_line", "api", "api_type", "tips", "affinity_api"],
}


def small_report() -> dict[str, Any]:
    strings = [
        "",  # 0
        "train.py",  # 1
        "Success",  # 2
        "nb.ipynb",  # 3
        "Failure",  # 4
        "nb.ipynb:1:1: bad",  # 5
        "MODIFY",  # 6
        "TP100",  # 7
        "torch.cuda.synchronize",  # 8
        "change it",  # 9
        "safe",  # 10
        "UNKNOWN",  # 11
        "TP950",  # 12
        "not in the list",  # 13
        "2.6",  # 14
        "performance",  # 15
        "TASK_QUEUE_ENABLE",  # 16
        "set it",  # 17
        "affinity",  # 18
        "torch.roll",  # 19
        "torch",  # 20
        "torch_npu.contrib.function.roll",  # 21
        "numerics: pinned",  # 22
    ]
    return {
        "tool": "torchport",
        "version": "0.1.0",
        "format_version": 2,
        "command": "migrate",
        "target": "npu",
        "summary": {"files": 2},
        "columns": {k: list(v) for k, v in COLUMNS.items()},
        "files": [[1, 2, 0, 1, 1, 0, 3, 14], [3, 4, 5, 0, 0, 1, 0, 0]],
        "findings": [
            [1, 0, 3, 4, 5, 6, 7, 8, 9, 1, 10, 22],
            [1, 0, 7, 7, 1, 11, 12, 8, 13, 0, 0, 0],
            [3, 2, 1, 1, 9, 11, 12, 19, 13, 0, 0, 0],
        ],
        "cuda_ops": [[1, 19]],
        "advice": [[15, 0, 0, 0, 0, 16, 0, 17, 0], [18, 1, 0, 8, 8, 19, 20, 0, 21]],
        "strings": strings,
    }


def test_rows_expand_to_one_object_each_with_empty_optional_cells_left_out():
    rep = report_json.expand(small_report())
    assert rep["target"] == "npu" and rep["summary"] == {"files": 2} and rep["format_version"] == 2
    assert "strings" not in rep and "columns" not in rep
    assert rep["files"] == [
        {
            "file": "train.py",
            "outcome": "Success",
            "python": True,
            "changed": True,
            "findings": 3,
            "min_torch_version": "2.6",
        },
        {
            "file": "nb.ipynb",
            "outcome": "Failure",
            "reason": "nb.ipynb:1:1: bad",
            "python": False,
            "changed": False,
            "not_migrated": True,
            "findings": 0,
        },
    ]
    assert rep["findings"] == [
        {
            "file": "train.py",
            "start_line": 3,
            "end_line": 4,
            "column": 5,
            "operation": "MODIFY",
            "code": "TP100",
            "api": "torch.cuda.synchronize",
            "message": "change it",
            "applied": True,
            "applicability": "safe",
            "changes": "numerics: pinned",
        },
        {
            "file": "train.py",
            "start_line": 7,
            "end_line": 7,
            "column": 1,
            "operation": "UNKNOWN",
            "code": "TP950",
            "api": "torch.cuda.synchronize",
            "message": "not in the list",
            "applied": False,
        },
        {
            "file": "nb.ipynb",
            "cell": 2,
            "start_line": 1,
            "end_line": 1,
            "column": 9,
            "operation": "UNKNOWN",
            "code": "TP950",
            "api": "torch.roll",
            "message": "not in the list",
            "applied": False,
        },
    ]
    assert rep["cuda_ops"] == [{"file": "train.py", "api": "torch.roll"}]
    assert rep["advice"] == [
        {"kind": "performance", "scope": "project", "api": "TASK_QUEUE_ENABLE", "tips": "set it"},
        {
            "kind": "affinity",
            "scope": "site",
            "file": "train.py",
            "start_line": 8,
            "end_line": 8,
            "api": "torch.roll",
            "api_type": "torch",
            "affinity_api": "torch_npu.contrib.function.roll",
        },
    ]


def test_a_report_without_advice_has_no_advice_key():
    doc = small_report()
    del doc["advice"]
    del doc["columns"]["advice"]
    assert "advice" not in report_json.expand(doc)


def test_format_1_is_returned_as_it_is():
    old = {"tool": "torchport", "files": [{"file": "a.py"}], "findings": [{"file": "a.py", "code": "TP100"}]}
    assert report_json.expand(old) is old


@pytest.mark.parametrize(
    "damage, says",
    [
        (lambda d: d.update(format_version=3), "format_version 3"),
        (lambda d: d["findings"][0].append(0), "findings row 0 is not a row of 12 cells"),
        (lambda d: d["findings"][1].__setitem__(8, 99), "findings row 1, message: string 99 of 23"),
        (lambda d: d["files"][0].__setitem__(6, -1), "files row 0, findings: -1 is not a count"),
        (lambda d: d["columns"]["findings"].reverse(), "the columns of 'findings'"),
        (lambda d: d["strings"].__setitem__(0, "x"), "no table of strings starting with the empty string"),
        (lambda d: d.update(findings={"rows": []}), "format_version"),
    ],
)
def test_a_damaged_report_is_refused_with_what_is_wrong(damage, says):
    doc = small_report()
    if says == "format_version":  # a format-2 table in a report that says no version
        del doc["format_version"]
    damage(doc)
    with pytest.raises(report_json.ReportFormatError, match=re.escape(says)):
        report_json.expand(doc)


def test_add_section_keeps_the_tables_as_written(tmp_path: Path):
    path = tmp_path / "report.json"
    text = "{\n" + json.dumps(small_report(), indent=None)[1:] + "\n"
    path.write_text(text, encoding="utf-8")
    report_json.add_section(path, "storage", {"bucket": "obs://b", "paths": ["a", "b"]})
    new = path.read_text(encoding="utf-8")
    assert new.startswith('{\n  "storage": {\n    "bucket": "obs://b",')
    assert new.endswith(text[2:])  # the core's text, byte for byte
    rep = report_json.load(path)
    assert rep["storage"] == {"bucket": "obs://b", "paths": ["a", "b"]}
    assert rep["findings"] == report_json.expand(small_report())["findings"]
    report_json.add_section(path, "storage", {"bucket": "obs://c"})  # a second time: replaced
    assert report_json.load(path)["storage"] == {"bucket": "obs://c"}


def core(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchport", *args, "--no-config"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )


@pytest.mark.parametrize("target", ["npu", "cpu"])
def test_the_cores_report_reads_back_as_its_text_findings(target: str):
    """Every finding of `analyze --format json`, expanded, is the line `--format text` prints for
    it (path:line:col: CODE [OP] api: message), in the same order: two outputs of the core, one
    of them read through the string table."""
    as_json = core("analyze", str(EXAMPLE), "-t", target, "--format", "json")
    as_text = core("analyze", str(EXAMPLE), "-t", target, "--format", "text", "-q")
    assert as_json.returncode == as_text.returncode == 1, as_json.stderr
    rep = report_json.loads(as_json.stdout)
    lines = [
        f"{f['file']}:{f['start_line']}:{f['column']}: {f['code']} [{f['operation']}] {f['api']}: "
        + f["message"]
        for f in rep["findings"]
    ]
    assert len(lines) > 10
    assert lines == [ln for ln in as_text.stdout.splitlines() if re.match(r"\S+:\d+:\d+: TP\d+ ", ln)]
    assert rep["summary"]["files"] == len(rep["files"])
    assert sum(f["findings"] for f in rep["files"]) == len(rep["findings"])


def test_each_string_is_stored_once(tmp_path: Path):
    """A project whose 400 findings share a few APIs and messages: each of those is written
    once, and a finding costs a row of numbers."""
    proj = tmp_path / "p"
    proj.mkdir()
    body = "import torch\n" + "".join(f"torch.cuda.synchronize()  # {i}\n" for i in range(200))
    for name in ("a.py", "b.py"):
        (proj / name).write_text(body, encoding="utf-8")
    proc = core("analyze", str(proj), "-t", "npu", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    rep = report_json.loads(proc.stdout)
    sync = [f for f in rep["findings"] if f["api"] == "torch.cuda.synchronize"]
    assert len(sync) == 400
    assert {f["start_line"] for f in sync if f["file"] == "b.py"} == set(range(2, 202))
    assert len({f["message"] for f in sync}) == 1
    raw = proc.stdout
    assert raw.count(json.dumps(sync[0]["message"], ensure_ascii=False)) == 1
    assert raw.count('"torch.cuda.synchronize"') == 1
    assert len(raw.encode()) < 400 * 40 + 3000, len(raw.encode())


def test_any_damage_is_a_format_error_or_a_report():
    """Cells, rows and tables replaced at random (a seeded walk, 3,000 cases): expand either reads
    the report or raises ReportFormatError (a ValueError, which every caller handles), never
    another exception."""
    import copy
    import random

    rng = random.Random(35)
    junk: list[Any] = [None, -1, 10**9, 1.5, "x", True, [], {}, [0], {"a": 1}]
    for _ in range(3000):
        doc = copy.deepcopy(small_report())
        for _ in range(rng.randint(1, 3)):
            key = rng.choice(
                ["files", "findings", "cuda_ops", "advice", "strings", "columns", "format_version"]
            )
            target = doc[key]
            if isinstance(target, list) and target and rng.random() < 0.7:
                i = rng.randrange(len(target))
                if isinstance(target[i], list) and target[i] and rng.random() < 0.7:
                    target[i][rng.randrange(len(target[i]))] = rng.choice(junk)
                else:
                    target[i] = rng.choice(junk)
            elif isinstance(target, dict) and target:
                target[rng.choice(list(target))] = rng.choice(junk)
            else:
                doc[key] = rng.choice(junk)
        try:
            rep = report_json.expand(doc)
        except report_json.ReportFormatError:
            continue
        assert isinstance(rep["findings"], list)
