"""float64 on a target without float64: never downgraded; a warning once per call site with file:line, and
with strict (--strict) an error. The cpu target has float64, so these tests use the cpu target's data with
float64=False: the same code path the npu and mps targets take."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch

from runtime_testlib import enabled, run_python, run_torchport
from torchport.runtime._session import Float64Unsupported, TorchportWarning
from torchport.targets import TARGETS

NO_FP64 = dataclasses.replace(TARGETS["cpu"], float64=False)


def test_targets_without_float64() -> None:
    # data/targets.json no_dtypes: npu (Ascend FAQ), mps, hpu (Gaudi best practices: no or limited double)
    assert {n for n, t in TARGETS.items() if not t.float64} == {"npu", "mps", "hpu"}


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


def _warned_lines(fn: Callable[[], Any]) -> tuple[Any, list[int]]:
    with enabled(NO_FP64):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn()
    ours = [w for w in caught if issubclass(w.category, TorchportWarning)]
    assert all(Path(w.filename).name == "test_runtime_float64.py" for w in ours)
    return out, [w.lineno for w in ours]


def test_float64_tensor_moved_to_the_target_warns() -> None:
    x64 = torch.zeros(2, dtype=torch.float64)  # made on the host, before the redirect
    x32 = torch.zeros(2)

    def moves() -> list[torch.Tensor]:
        return [
            x64.to("cuda"),  # warns
            x32.double().cuda(),  # warns (double() on the host is fine; the move is not)
            x64.to(device="cuda:0"),  # warns
            x32.to("cuda"),  # float32: silent
            x64.to("cuda", torch.float32),  # converted on the way: silent
        ]

    out, lines = _warned_lines(moves)
    assert [t.dtype for t in out[:3]] == [torch.float64] * 3  # never downgraded
    assert len(lines) == 3 and len(set(lines)) == 3


def test_module_with_float64_parameters_or_buffers_warns() -> None:
    # made before the redirect (on this stand-in target the host is the target device)
    f64 = torch.nn.Linear(2, 2).double()  # float64 parameters
    buf = torch.nn.Linear(2, 2)
    buf.register_buffer("scale", torch.ones(1, dtype=torch.float64))  # a float64 buffer
    f32 = torch.nn.Linear(2, 2)

    def moves() -> None:
        f64.to("cuda")
        buf.cuda()
        f32.cuda()  # float32: silent
        f32.to("cuda:0")

    _, lines = _warned_lines(moves)
    assert len(lines) == 2 and len(set(lines)) == 2


def test_factories_producing_float64_without_dtype_warn() -> None:
    data = np.arange(3, dtype=np.float64)

    def make() -> list[torch.Tensor]:
        before = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            a = torch.zeros(2, device="cuda")  # float64 from the default dtype
        finally:
            torch.set_default_dtype(before)
        b = torch.tensor(data, device="cuda")  # float64 from numpy data
        c = torch.as_tensor(data, device="cuda")
        d = torch.from_numpy(data).cuda()
        e = torch.tensor(data, dtype=torch.float32, device="cuda")  # float32: silent
        return [a, b, c, d, e]

    out, lines = _warned_lines(make)
    assert [t.dtype for t in out] == [torch.float64] * 4 + [torch.float32]
    assert len(lines) == 4 and len(set(lines)) == 4


def test_the_float64_check_costs_nothing_on_targets_with_float64() -> None:
    # the wrappers test the result only where the target lacks float64 (npu, mps): on cpu, xpu, ... the hot
    # path is the one without the check
    with enabled("cpu") as s:
        assert not [x for x in s.log.sites.values() if "float64" in x.api]
        torch.zeros(2, dtype=torch.float64).to("cuda")
        assert not [x for x in s.log.sites.values() if "float64" in x.api]


def test_cli_strict_fails_with_one_line(tmp_path: Path) -> None:
    # `torchport run --strict` on a target without float64; that target is the cpu target's data with
    # float64=False (npu and mps cannot run here), set up in the child before the command line runs
    script = tmp_path / "f64.py"
    script.write_text(
        "import numpy as np\nimport torch\nx = torch.ones(2, device='cuda')  # float32: fine\n"
        "y = torch.tensor(np.zeros(2), device='cuda')  # float64 from numpy data\nprint('not reached')\n"
    )
    code = (
        "import dataclasses, sys\n"
        "import torchport.targets as T\n"
        "T.TARGETS['cpu'] = dataclasses.replace(T.TARGETS['cpu'], float64=False)\n"
        "from torchport.runtime.cli import main\n"
        f"sys.exit(main(['--target', 'cpu', '--strict', {str(script)!r}]))\n"
    )
    done = run_python(["-c", code])
    assert done.returncode == 1
    assert "not reached" not in done.stdout and "Traceback" not in done.stderr
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("torchport: error:")]
    assert errors == [
        f"torchport: error: {script}:4: torch.tensor with float64 on cpu: cpu has no float64 "
        f"({TARGETS['cpu'].sources['float64']}); torchport does not downgrade it (--strict)"
    ], done.stderr
