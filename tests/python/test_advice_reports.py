"""Ascend's advice reports (issue 20 §1): api_precision_advice.csv, api_performance_advice.csv,
affinity_api_call.csv and report.json's "advice", checked against the upstream JSON itself.

The oracle is independent of the C++ core: Python's ast resolves the test project's imports and
finds every call of every API the upstream lists name; each must be reported at its line.
"""

from __future__ import annotations

import ast
import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from torchport import report_json

REPO = Path(__file__).resolve().parents[2]
PROJECT = Path(__file__).parent / "fixtures" / "advice_project"
UPSTREAM = next(
    (
        p
        for p in (REPO.parent / "shared" / "upstream", REPO.parent.parent / "shared" / "upstream")
        if p.is_dir()
    ),
    None,
)
CORPUS = None if UPSTREAM is None else UPSTREAM.parent / "corpus"
needs_upstream = pytest.mark.skipif(UPSTREAM is None, reason="../shared/upstream is not present")


def torchport(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("torchport")
    cmd = [str(exe)] if exe.is_file() else [sys.executable, "-m", "torchport"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, check=False)


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def calls(path: Path) -> list[tuple[str, int, ast.Call]]:
    """(qualified callee, line, node) of every call whose callee resolves through the imports."""
    tree = ast.parse(path.read_text())
    alias: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                alias[a.asname or a.name] = f"{node.module}.{a.name}"
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        parts, f = [], node.func
        while isinstance(f, ast.Attribute):
            parts.append(f.attr)
            f = f.value
        if isinstance(f, ast.Name) and f.id in alias:
            out.append((".".join([alias[f.id], *reversed(parts)]), node.lineno, node))
    return out


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("advice")
    p = torchport("migrate", str(PROJECT), "-t", "npu", "-o", str(out))
    assert p.returncode == 0, p.stderr
    (d,) = out.glob("*/torchport-report")
    return d


@needs_upstream
def test_every_listed_api_is_reported_at_its_line(reports: Path) -> None:
    assert UPSTREAM is not None
    adv = json.loads((UPSTREAM / "ascend-msfmktransplt" / "precision_performance_advice.json").read_text())
    aff = json.loads((UPSTREAM / "ascend-msfmktransplt" / "affinity_list_1_11_0.json").read_text())
    precision = read_csv(reports / "api_precision_advice.csv")
    performance = read_csv(reports / "api_performance_advice.csv")
    affinity = read_csv(reports / "affinity_api_call.csv")
    sites = calls(PROJECT / "train.py")
    checked = 0
    for table, rows in ((adv["api_precision_dict"], precision), (adv["api_performance_dict"], performance)):
        for api, tip in table.items():
            for name, line, _ in sites:
                if name == api:
                    assert {
                        "File": "train.py",
                        "Start Line": str(line),
                        "End Line": str(line),
                        "OP": api,
                        "Tips": tip,
                    } in rows
                    checked += 1
    for entry in aff["torch"].values():
        for name, line, _ in sites:
            if name == entry["full_name"]:
                want = {
                    "File": "train.py",
                    "Start Line": str(line),
                    "End Line": str(line),
                    "Api Type": "torch",
                    "Api Call Name": name,
                    "Affinity Api Name": entry["affinity_api"],
                }
                assert want in affinity
                checked += 1
    tree = ast.parse((PROJECT / "train.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in aff["function"]:
            if [a.arg for a in node.args.args] == aff["function"][node.name]["parameter"]:
                assert {
                    "File": "train.py",
                    "Start Line": str(node.lineno),
                    "End Line": str(node.end_lineno),
                    "Api Type": "function",
                    "Api Call Name": node.name,
                    "Affinity Api Name": aff["function"][node.name]["affinity_function"],
                } in affinity
                checked += 1
        if isinstance(node, ast.ClassDef) and node.name in aff["class"]:
            assert {
                "File": "train.py",
                "Start Line": str(node.lineno),
                "End Line": str(node.end_lineno),
                "Api Type": "class",
                "Api Call Name": node.name,
                "Affinity Api Name": aff["class"][node.name]["affinity_class"],
            } in affinity
            checked += 1
    # Parameter advice: a listed keyword that is absent, or a literal that misses the expectation.
    for api, body in adv["api_parameters_performance_dict"].items():
        for param, spec in body["parameter"].items():
            for name, line, node in sites:
                if name != api:
                    continue
                kw = {k.arg: ast.unparse(k.value) for k in node.keywords}
                value = kw.get(param, spec["default_value"])
                bad = (
                    value != spec["expected_value"]
                    if "expected_value" in spec
                    else value == spec["unexpected_value"]
                )
                row = {
                    "File": "train.py",
                    "Start Line": str(line),
                    "End Line": str(line),
                    "OP": f"{api}({param})",
                    "Tips": spec["msg"],
                }
                assert (row in performance) == bad, (row, bad)
                checked += 1
    for setting, tip in adv["performance_configuration_dict"].items():
        row = {
            "File": "NA",
            "Start Line": "NA",
            "End Line": "NA",
            "OP": setting,
            "Tips": "project-level (no file or line): " + tip,
        }
        assert row in performance
        checked += 1
    assert checked >= 15  # the project exercises the lists (a broken oracle would check nothing)
    # Every row with a site has its file; nothing else is reported.
    for rows in (precision, performance, affinity):
        for r in rows:
            assert r["File"] in ("train.py", "NA")
    doc = report_json.load(reports / "report.json")
    assert len(doc["advice"]) == len(precision) + len(performance) + len(affinity)
    assert all(a["scope"] == "project" or a["file"] == "train.py" for a in doc["advice"])


@needs_upstream
def test_data_is_fresh() -> None:
    p = subprocess.run(
        [sys.executable, str(REPO / "tools" / "gen_advice.py"), str(UPSTREAM), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 0, p.stdout[:3000] + p.stderr


def test_no_advice_for_targets_without_vendor_lists(tmp_path: Path) -> None:
    p = torchport("migrate", str(PROJECT), "-t", "cpu", "-o", str(tmp_path))
    assert p.returncode == 0, p.stderr
    (d,) = tmp_path.glob("*/torchport-report")
    assert not list(d.glob("*advice*.csv")) and not (d / "affinity_api_call.csv").exists()
    assert "advice" not in report_json.load(d / "report.json")


@pytest.mark.skipif(CORPUS is None or not (CORPUS / "kuangliu__pytorch-cifar").is_dir(), reason="no corpus")
def test_corpus_project_rows_point_at_their_api(tmp_path: Path) -> None:
    assert CORPUS is not None
    src = CORPUS / "kuangliu__pytorch-cifar"
    p = torchport("analyze", str(src), "-t", "npu", "-o", str(tmp_path))
    assert p.returncode in (0, 1), p.stderr
    rows = read_csv(tmp_path / "api_performance_advice.csv") + read_csv(tmp_path / "api_precision_advice.csv")
    sited = [r for r in rows if r["File"] != "NA"]
    assert sited, "pytorch-cifar builds an SGD optimizer and DataLoaders: advice expected"
    for r in sited:
        line = (src / r["File"]).read_text().splitlines()[int(r["Start Line"]) - 1]
        assert r["OP"].split("(")[0].rsplit(".", 1)[-1] in line, (r, line)
