"""The report pages in a real browser (Debian's chromium, headless, driven by selenium through
Debian's chromium-driver; tools/setup.sh installs both): each page loads without console errors,
a filter click shows the expected rows, and a screenshot of each is kept in build/screenshots/
(a CI artifact)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import torch
import torch.nn as nn
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from probe_testlib import mlp, train
from torchport import report_json
from torchport.probe.cli import compare_main

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "build" / "screenshots"
EXAMPLE = ROOT / "examples" / "cuda_project"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def browser():
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail("chromium and chromium-driver are needed (Debian packages; tools/setup.sh installs them)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    SHOTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()


def load(driver: Any, page: Path, fragment: str = "") -> None:
    driver.get(page.as_uri() + fragment)
    driver.get_log("browser")  # start from an empty log for this page


def console_errors(driver: Any) -> list[dict[str, Any]]:
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def wait_for(driver: Any, what: Callable[[Any], Any]) -> Any:
    return WebDriverWait(driver, 20).until(what)


def visible_rows(driver: Any) -> list[list[str]]:
    return [
        [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        for tr in driver.find_elements(By.CSS_SELECTOR, "#findings tbody tr")
    ]


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    out = tmp_path_factory.mktemp("migrated")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchport",
            "migrate",
            str(EXAMPLE),
            "-o",
            str(out),
            "--target",
            "npu",
            "--no-config",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    reports = out / "cuda_project_npu" / "torchport-report"
    assert f"report page: {reports / 'index.html'}" in proc.stdout
    return reports


def test_migration_page_filters_and_opens_a_file(browser, migrated):
    report = report_json.load(migrated / "report.json")
    load(browser, migrated / "index.html")
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#findings tbody tr"))
    assert browser.find_element(By.ID, "title").text == "torchport migration for npu"
    assert len(visible_rows(browser)) == len(report["findings"])
    browser.save_screenshot(str(SHOTS / "migration_report.png"))

    # severity filter: without notes only the unsupported (error) and unknown (warning) rows stay
    browser.find_element(By.CSS_SELECTOR, "input[name=sev][value=note]").click()
    expected = [f for f in report["findings"] if f["operation"] in ("UNSUPPORTED", "UNKNOWN")]
    rows = visible_rows(browser)
    assert expected and len(rows) == len(expected)
    assert [r[1] for r in rows] == [f"{f['file']}:{f['start_line']}:{f['column']}" for f in expected]
    browser.find_element(By.CSS_SELECTOR, "input[name=sev][value=note]").click()

    # rule filter
    Select(browser.find_element(By.ID, "code")).select_by_value("TP300")
    rows = visible_rows(browser)
    assert len(rows) == sum(1 for f in report["findings"] if f["code"] == "TP300") > 1
    assert {r[2] for r in rows} == {"TP300"}

    # a row opens its file: the side-by-side diff is loaded from files/N.js, findings inline
    browser.find_elements(By.CSS_SELECTOR, "#findings tbody tr")[0].click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#detail table.diff"))
    changed = browser.find_elements(By.CSS_SELECTOR, "#detail tr.d-change")
    assert any('"cuda"' in tr.find_element(By.CSS_SELECTOR, "td.old").text for tr in changed)
    assert any('"npu"' in tr.find_element(By.CSS_SELECTOR, "td.new").text for tr in changed)
    notes = [tr.text for tr in browser.find_elements(By.CSS_SELECTOR, "#detail tr.finding")]
    assert any(n.startswith("TP300 MODIFY") and "[applied]" in n for n in notes)
    assert "#file=train.py&line=" in browser.current_url
    # The chunk's rows carry no line numbers: the page counts them. Every numbered line it shows
    # is that line of the original (left) and of the migrated file (right).
    original = (EXAMPLE / "train.py").read_text().splitlines()
    rewritten = (migrated.parent / "train.py").read_text().splitlines()
    shown = browser.execute_script(
        "return [...document.querySelectorAll('#detail tr.d-same, #detail tr.d-change, #detail tr.d-minus,"
        " #detail tr.d-plus')].map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent));"
    )
    assert len(shown) > 10 and any(r[0] != r[2] for r in shown)  # lines inserted above: numbers differ
    for old_no, old_text, new_no, new_text in shown:
        assert not old_no or original[int(old_no) - 1] == old_text, (old_no, old_text)
        assert not new_no or rewritten[int(new_no) - 1] == new_text, (new_no, new_text)
    time.sleep(0.3)
    browser.save_screenshot(str(SHOTS / "migration_file.png"))
    assert console_errors(browser) == []


def test_a_csv_row_links_to_its_line(browser, migrated):
    """index.html#file=<File>&line=<Start Line> (the CSV columns) opens that file at that line."""
    first = (migrated / "unsupported_api.csv").read_text().splitlines()[1].split(",")
    load(browser, migrated / "index.html", f"#file={first[0]}&line={first[1]}")
    target = wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#detail tr.target"))
    assert target[0].find_element(By.CSS_SELECTOR, "td.no").text == first[1]
    # the tree opened down to the file and selected it
    assert browser.find_element(By.CSS_SELECTOR, ".tree div.sel").text.startswith(Path(first[0]).name)
    assert console_errors(browser) == []


def test_analyze_page_shows_the_source_with_findings(browser, tmp_path):
    shutil.copytree(EXAMPLE, tmp_path / "proj")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchport",
            "analyze",
            str(tmp_path / "proj"),
            "-t",
            "mps",
            "-o",
            str(tmp_path / "r"),
            "--no-config",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    load(browser, tmp_path / "r" / "index.html", "#file=model/net.py")
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#detail table.diff"))
    assert browser.find_element(By.CSS_SELECTOR, "#detail th").text.startswith("source (analyze")
    assert browser.find_elements(By.CSS_SELECTOR, "#detail tr.finding")
    browser.save_screenshot(str(SHOTS / "analyze_file.png"))
    assert console_errors(browser) == []


class LossModel(nn.Module):
    """Returns its loss, so the dumps hold a loss per step."""

    def __init__(self) -> None:
        super().__init__()
        self.net = mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).pow(2).mean()


def test_accuracy_page_charts_and_flagged_rows(browser, tmp_path):
    a = train(tmp_path / "a", LossModel(), steps=3, full_tensors=True)
    bad = LossModel()
    with torch.no_grad():
        bad.net[2].weight[3] += 0.5
    b = train(tmp_path / "b", bad, steps=3, full_tensors=True)
    page = tmp_path / "report.html"
    assert compare_main([str(b), str(a), "--format", "html", "-o", str(page)]) == 1
    load(browser, page)
    charts = browser.find_elements(By.CSS_SELECTOR, "svg.chart")
    assert len(charts) == 3  # forward, backward, loss
    label = browser.find_element(By.CSS_SELECTOR, "svg .firstlabel").text
    assert label == "first divergence: net.2 (Linear) forward call 0 output[0]"
    assert len(charts[2].find_elements(By.TAG_NAME, "polyline")) == 2  # A and B loss curves
    rows = browser.find_elements(By.CSS_SELECTOR, "#rows tbody tr")
    flagged = [tr for tr in rows if tr.get_attribute("class") in ("warn", "fail")]
    assert flagged and len(flagged) < len(rows)
    browser.save_screenshot(str(SHOTS / "accuracy_report.png"))
    browser.find_element(By.ID, "flagged").click()
    shown = [tr for tr in rows if tr.is_displayed()]
    assert shown == flagged
    assert browser.find_element(By.ID, "shown").text == f"{len(flagged)} of {len(rows)} rows"
    # the header stays in view when the table scrolls
    browser.find_element(By.ID, "flagged").click()
    browser.execute_script("document.querySelector('.tablewrap').scrollTop = 400")
    th = browser.find_element(By.CSS_SELECTOR, "#rows th")
    wrap = browser.find_element(By.CSS_SELECTOR, ".tablewrap")
    assert abs(th.rect["y"] - wrap.rect["y"]) < 3
    browser.execute_script("arguments[0].scrollIntoView()", wrap)
    browser.save_screenshot(str(SHOTS / "accuracy_table.png"))
    assert console_errors(browser) == []


def test_summary_per_target_links_the_other_targets(browser, migrated):
    out = migrated.parent.parent  # OUTDIR, which holds cuda_project_npu
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchport",
            "migrate",
            str(EXAMPLE),
            "-o",
            str(out),
            "-t",
            "cpu",
            "--no-config",
            "-q",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    load(browser, out / "cuda_project_cpu" / "torchport-report" / "index.html")
    rows = wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#targets tbody tr"))
    cells = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")] for tr in rows]
    npu = report_json.load(migrated / "report.json")["summary"]
    assert [c[0] for c in cells] == ["cpu", "npu"]
    assert cells[1][3] == str(npu["unsupported"]) and cells[1][1] == str(npu["changed"])
    browser.save_screenshot(str(SHOTS / "migration_targets.png"))
    browser.find_element(By.LINK_TEXT, "npu").click()
    wait_for(browser, lambda d: d.find_element(By.ID, "title").text == "torchport migration for npu")
    assert console_errors(browser) == []
