"""`analyze --format sarif` (SARIF 2.1.0, validated against the official schema) and
`--format github` (workflow annotations), on the example project and the end-to-end scripts."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from torchport import report_json

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "sarif" / "sarif-schema-2.1.0.json").read_text())
E2E = ROOT / "tests" / "fixtures" / "e2e_scripts"
EXAMPLE = ROOT / "examples" / "cuda_project"


def analyze(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchport", "analyze", *args, "--no-config"],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


@pytest.mark.parametrize("target", ["npu", "accelerator"])
def test_sarif_of_the_e2e_scripts_validates(target):
    proc = analyze(str(E2E), "--target", target, "--format", "sarif")
    assert proc.returncode == 1, proc.stderr  # findings
    log = json.loads(proc.stdout)
    jsonschema.validate(log, SCHEMA)
    run = log["runs"][0]
    assert log["version"] == "2.1.0"
    assert run["tool"]["driver"]["name"] == "torchport"
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == E2E.as_uri() + "/"
    # the same findings as the JSON report, one result each, pointing at the right rule
    report = report_json.loads(analyze(str(E2E), "--target", target, "--format", "json").stdout)
    assert len(run["results"]) == len(report["findings"]) > 20
    rules = run["tool"]["driver"]["rules"]
    for res, f in zip(run["results"], report["findings"]):
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"] == f["code"]
        region = res["locations"][0]["physicalLocation"]["region"]
        assert (region["startLine"], region["startColumn"]) == (f["start_line"], f["column"])
        assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == f["file"]
        level = {"UNSUPPORTED": "error", "UNKNOWN": "warning"}.get(f["operation"], "note")
        assert res["level"] == level


def test_sarif_reports_a_file_that_does_not_parse(tmp_path):
    (tmp_path / "ok.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    (tmp_path / "bad.py").write_text("def f(:\n    pass\n")
    (tmp_path / "odd name.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    proc = analyze(str(tmp_path), "--target", "cpu", "--format", "sarif")
    log = json.loads(proc.stdout)
    jsonschema.validate(log, SCHEMA)
    inv = log["runs"][0]["invocations"][0]
    assert inv["executionSuccessful"] is False
    (note,) = inv["toolExecutionNotifications"]
    loc = note["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "bad.py" and loc["region"]["startLine"] == 1
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]
    }
    assert uris == {"ok.py", "odd%20name.py"}


def test_github_annotations_point_at_the_files_from_the_working_directory(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(EXAMPLE, proj)
    proc = analyze("proj", "--target", "npu", "--format", "github", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    report = report_json.loads(analyze(str(proj), "--target", "npu", "--format", "json").stdout)
    assert len(lines) == len(report["findings"])
    pattern = re.compile(
        r"^::(error|warning|notice) file=([^,]+),line=(\d+)(,endLine=\d+)?,col=(\d+),title=(.+)::(.+)$"
    )
    for line, f in zip(lines, report["findings"]):
        m = pattern.match(line)
        assert m, line
        kind = {"UNSUPPORTED": "error", "UNKNOWN": "warning"}.get(f["operation"], "notice")
        assert m.group(1) == kind
        assert m.group(2) == f"proj/{f['file']}" and (proj.parent / m.group(2)).is_file()
        assert int(m.group(3)) == f["start_line"] and int(m.group(5)) == f["column"]
        assert f["code"] in m.group(6) and "%3A" not in m.group(7)
    assert any(line.startswith("::error file=proj/train.py,line=") for line in lines)
