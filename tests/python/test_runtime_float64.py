"""float64 on a target without float64: never downgraded; a warning once per call site with file:line, and
with strict (--strict) an error. The cpu target has float64, so these tests use the cpu target's data with
float64=False: the same code path the npu and mps targets take."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import pytest
import torch

from runtime_testlib import enabled, run_torchport
from torchport.runtime._session import Float64Unsupported, TorchportWarning
from torchport.targets import TARGETS

NO_FP64 = dataclasses.replace(TARGETS["cpu"], float64=False)


def test_targets_without_float64() -> None:
    assert {n for n, t in TARGETS.items() if not t.float64} == {"npu", "mps"}


def test_warns_once_per_call_site_and_keeps_float64() -> None:
    with enabled(NO_FP64) as s:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(3):
                x = torch.zeros(2, dtype=torch.float64, device="cuda")  # one site, three calls
            y = torch.ones(2, device="cuda").double()  # another site
            z = torch.cuda.DoubleTensor([1.0])
            f = torch.ones(1, dtype=torch.float32, device="cuda")  # not float64: nothing
        ours = [w for w in caught if issubclass(w.category, TorchportWarning)]
        mismatches = [x for x in s.log.sites.values() if x.cls == "mismatch"]
    assert x.dtype == y.dtype == z.dtype == torch.float64  # never downgraded
    assert f.dtype == torch.float32
    assert len(ours) == 3  # zeros, double, DoubleTensor: one each
    assert all(Path(w.filename).name == "test_runtime_float64.py" for w in ours)
    assert {w.lineno for w in ours} == {m.lineno for m in mismatches}
    assert "test_runtime_float64.py:" in str(ours[0].message) and "no float64" in str(ours[0].message)


def test_strict_fails_with_the_call_site() -> None:
    with enabled(NO_FP64, strict=True):
        with pytest.raises(
            Float64Unsupported, match=r"test_runtime_float64\.py:\d+: torch\.randn with float64"
        ):
            torch.randn(2, dtype=torch.float64, device="cuda")
        assert torch.randn(2, device="cuda").dtype == torch.float32  # float32 still fine


def test_float64_on_a_float64_target_is_silent() -> None:
    with enabled("cpu") as s:
        with warnings.catch_warnings():
            warnings.simplefilter("error", TorchportWarning)
            assert torch.zeros(1, dtype=torch.float64, device="cuda").dtype == torch.float64
        assert not [x for x in s.log.sites.values() if x.cls == "mismatch"]


def test_cli_strict_on_cpu_runs(tmp_path: Path) -> None:
    # cpu has float64, so --strict must not fail there
    script = tmp_path / "f64.py"
    script.write_text(
        "import torch\nx = torch.zeros(2, dtype=torch.float64, device='cuda')\nprint(x.dtype)\n"
    )
    done = run_torchport(["run", "--target", "cpu", "--strict", "--quiet", str(script)])
    assert done.returncode == 0 and "torch.float64" in done.stdout
