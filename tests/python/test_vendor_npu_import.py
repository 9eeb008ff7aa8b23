"""The vendor's own torch_npu 2.13.0, its Python layer run on this machine's torch with the compiled core
replaced by a generated surface (tools/probe_vendor_npu_import.py, issue 31 §2): the facts the catalogue holds
about return values and config objects, seen in the vendor's running code rather than read from it.

Needs the pinned wheel in build/torch_npu_wheels/ (CI downloads it in the step before pytest:
tools/check_vendor_npu.py --check); without it the test is skipped, saying so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PIN = json.loads((REPO / "data" / "vendor" / "torch_npu_wheels.json").read_text())["wheels"][-1]
WHEEL = REPO / "build" / "torch_npu_wheels" / PIN["filename"]

pytest.importorskip("torch")
pytest.importorskip("yaml")


@pytest.mark.skipif(not WHEEL.is_file(), reason=f"{WHEEL} is absent: run tools/check_vendor_npu.py first")
def test_the_vendors_python_layer_imports_and_keeps_the_facts_of_the_catalogue():
    p = subprocess.run(
        [sys.executable, str(REPO / "tools" / "probe_vendor_npu_import.py"), "--offline"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["import"] == "ok", report
    assert report["schemas_defined"] == report["schemas"] > 400 and not report["schemas_refused"]
    calls = report["calls"]
    # torch_cuda.json: get_device_capability "returns": "None" (TORCH_NPU_DEVICE_CAPABILITY is unset)
    assert calls["torch_npu.npu.get_device_capability()"] == "returns None"
    # data/catalogue/backends.json: a write of matmul.allow_tf32 is dropped (and reads back None)
    assert calls["torch_npu.npu.matmul.allow_tf32 = True; read back"] == "returns None"
    assert calls["torch_npu.npu.default_generators"] == "returns ()"
    # the first thing a rehearsal of the real package must provide: the device count of the compiled core
    assert "torch_npu._C._npu_getDeviceCount" in calls["torch_npu.npu.is_available()"]
