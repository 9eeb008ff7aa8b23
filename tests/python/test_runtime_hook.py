"""`TORCHPORT_TARGET=T python script.py` through torchport_autohook.pth: nothing imported when the variable is
unset, the redirect on when it is set, TORCHPORT_AUTOHOOK=0 switches it off, a missing package exits 2.

The .pth is processed with site.addsitedir() in a fresh interpreter (the code python runs at start-up for
every site directory); when the package is installed, the real start-up path is tested as well."""

from __future__ import annotations

import re
import site
from pathlib import Path

import pytest

import torchport
from runtime_testlib import NO_CUDA, PACKAGE_PARENT, run_python
from torchport.targets import TARGETS, vendor_package_missing

SCRIPT = "import torch\nx = torch.ones(2, device='cuda') * 3\nprint('sum', x.sum().item(), x.device)\n"


def _pth() -> Path:
    for d in [*site.getsitepackages(), PACKAGE_PARENT]:
        p = Path(d) / "torchport_autohook.pth"
        if p.is_file():
            return p
    pytest.fail(f"torchport_autohook.pth not found next to {torchport.__file__} nor in site-packages")


@pytest.fixture
def sitedir(tmp_path: Path) -> Path:
    d = tmp_path / "site"
    d.mkdir()
    (d / "torchport_autohook.pth").write_text(_pth().read_text())
    return d


def _start(sitedir: Path, script: Path) -> str:
    return (
        f"import site, sys, runpy\nsite.addsitedir({str(sitedir)!r})\n"
        f"sys.argv = [{str(script)!r}]\nrunpy.run_path({str(script)!r}, run_name='__main__')\n"
    )


def test_pth_is_one_guarded_line() -> None:
    lines = [ln for ln in _pth().read_text().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("import os;") and "TORCHPORT_TARGET" in lines[0]


def test_unset_costs_nothing(sitedir: Path) -> None:
    code = (
        f"import site, sys\nsite.addsitedir({str(sitedir)!r})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchport')))\n"
    )
    done = run_python(["-c", code])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_set_redirects_an_unchanged_script(sitedir: Path, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    log = tmp_path / "hook.log"
    done = run_python(["-c", _start(sitedir, script)], {"TORCHPORT_TARGET": "cpu", "TORCHPORT_LOG": str(log)})
    assert done.returncode == 0, done.stderr
    assert "sum 6.0 cpu" in done.stdout
    assert "train.py:2: [match] torch.ones(device='cuda') -> torch.ones(device='cpu')" in log.read_text()


def test_switch_off(sitedir: Path, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    done = run_python(["-c", _start(sitedir, script)], {"TORCHPORT_TARGET": "cpu", "TORCHPORT_AUTOHOOK": "0"})
    assert done.returncode != 0 and re.search(NO_CUDA, done.stderr)  # plain CUDA failure: the hook stayed off


def test_missing_package_exits_2(sitedir: Path, tmp_path: Path) -> None:
    if not vendor_package_missing(TARGETS["npu"]):
        pytest.skip("torch_npu installed")
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    done = run_python(["-c", _start(sitedir, script)], {"TORCHPORT_TARGET": "npu"})
    assert done.returncode == 2
    assert "torch_npu" in done.stderr and "Traceback" not in done.stderr and "sum" not in done.stdout


def test_installed_hook_at_startup(tmp_path: Path) -> None:
    installed = [Path(d) / "torchport_autohook.pth" for d in site.getsitepackages()]
    if not any(p.is_file() for p in installed):
        pytest.skip("torchport is not pip-installed here (source tree run)")
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    done = run_python([str(script)], {"TORCHPORT_TARGET": "cpu"})
    assert done.returncode == 0, done.stderr
    assert "sum 6.0 cpu" in done.stdout
