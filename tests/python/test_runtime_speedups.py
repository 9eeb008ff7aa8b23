"""torchport.runtime._speedups (src/speedups/_speedups.c) against the pure-Python code it speeds up: the
torch.device stand-in (python/torchport/runtime/_args.py, _install_device_type) gives the same values, the
same errors and the same log lines either way. The extension is compiled here from this tree's source with
the C compiler and Python's headers (tools/speedups.py; Python's limited API, as in the wheel), so that
both paths run in every test run, a source checkout included."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

import numpy as np
import pytest
import torch

import torchport.runtime._args as args_mod
from runtime_testlib import enabled, sites

REPO = Path(__file__).resolve().parents[2]
REAL = type(torch.device("cpu"))


def _tools_speedups() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tools_speedups", REPO / "tools" / "speedups.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def speedups(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    tool = _tools_speedups()
    return tool.load(tool.build(tmp_path_factory.mktemp("speedups")))


@pytest.fixture(params=["c", "python"])
def path(
    request: pytest.FixtureRequest, speedups: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    monkeypatch.setattr(args_mod, "SPEEDUPS", speedups if request.param == "c" else None)
    yield request.param


def _outcome(make: Callable[[], Any]) -> tuple[str, str]:
    try:
        return ("value", repr(make()))
    except Exception as e:  # the error torch (or the stand-in) gives, compared by type and text
        return (type(e).__name__, str(e).split("\n")[0])


# every shape of call: the kept ones, the mapped bare index, torch's own answers and errors
CALLS: tuple[tuple[str, Callable[[], Any]], ...] = (
    ("cuda", lambda: torch.device("cuda")),
    ("cuda, 0", lambda: torch.device("cuda", 0)),
    ("cuda:1", lambda: torch.device("cuda:1")),
    ("cuda, 300 (torch wraps it)", lambda: torch.device("cuda", 300)),
    ("cpu", lambda: torch.device("cpu")),
    ("bare 0", lambda: torch.device(0)),
    ("bare 1", lambda: torch.device(1)),
    ("device=0", lambda: torch.device(device=0)),
    ("numpy 0", lambda: torch.device(np.int64(0))),
    ("type=meta", lambda: torch.device(type="meta")),
    ("type=cuda, index=1", lambda: torch.device(type="cuda", index=1)),
    ("a device", lambda: torch.device(REAL("cpu"))),
    ("-1", lambda: torch.device(-1)),
    ("True", lambda: torch.device(True)),
    ("cuda, 0.0", lambda: torch.device("cuda", 0.0)),
    ("cuda, False", lambda: torch.device("cuda", False)),
    ("nodevice", lambda: torch.device("nodevice")),
    ("no argument", lambda: torch.device()),
    ("a list", lambda: torch.device([0])),
    ("three arguments", lambda: torch.device("cuda", 0, 1)),
)


def _run_calls() -> tuple[list[tuple[str, str, str]], list[tuple[Any, ...]], bool]:
    with enabled("cpu") as s:
        in_c = "DeviceMeta" in [k.__name__ for k in type(torch.device).__mro__]
        got = [(name, *_outcome(make)) for name, make in CALLS]
        got += [(name, *_outcome(make)) for name, make in CALLS]  # again: kept devices, counted sites
    logged = sorted((x.api, x.lineno, x.before, x.after, x.cls, x.why, x.count) for x in sites(s))
    return got, logged, in_c


def test_both_paths_give_the_same_values_errors_and_log_lines(speedups: ModuleType, monkeypatch: Any) -> None:
    monkeypatch.setattr(args_mod, "SPEEDUPS", speedups)
    c_values, c_log, in_c = _run_calls()
    assert in_c
    monkeypatch.setattr(args_mod, "SPEEDUPS", None)
    py_values, py_log, in_c = _run_calls()
    assert not in_c
    assert c_values == py_values
    assert c_log == py_log
    values = dict((name, (kind, text)) for name, kind, text in c_values)
    # what the values are, read once: the bare index is the target's device, the rest torch's own answer
    assert values["bare 0"] == values["device=0"] == values["numpy 0"] == ("value", "device(type='cpu')")
    assert values["cuda, 0"] == ("value", "device(type='cuda', index=0)")
    assert values["cuda, 300 (torch wraps it)"] == ("value", "device(type='cuda', index=44)")
    assert values["cuda, False"][0] == values["cuda, 0.0"][0] == "TypeError"
    assert values["-1"] == ("RuntimeError", "Device index must not be negative")
    assert values["type=cuda, index=1"] == ("value", "device(type='cuda', index=1)")
    # the three bare-index call sites, each called twice, and the dropped index of torch.device(1)
    assert [(b, a, cls, count) for _, _, b, a, cls, _, count in c_log] == [  # in line order
        ("torch.device(0)", "device(type='cpu')", "match", 2),
        ("torch.device(1)", "device(type='cpu')", "modified", 2),
        ("torch.device(0)", "device(type='cpu')", "match", 2),
        ("torch.device(0)", "device(type='cpu')", "match", 2),
    ]


def test_the_log_names_the_user_s_line(path: str) -> None:
    with enabled("cpu") as s:
        line = sys._getframe().f_lineno + 1
        torch.device(0)
    (site,) = [x for x in sites(s) if x.api == "torch.device"]
    assert (site.filename, site.lineno) == (__file__, line)


def test_devices_from_a_string_are_kept(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with enabled("cpu"):
        a, b = torch.device("cuda", 0), torch.device("cuda", 0)
        assert a is b and type(a) is REAL and a == REAL("cuda", 0)
        assert torch.device("cuda:1") is torch.device("cuda:1")
        assert torch.device(type="cuda", index=0) is not a  # keywords: torch's own call each time
        assert torch.device(0) is torch.device(0)  # the mapper's target device, as before
    monkeypatch.setattr(args_mod, "_KEPT_DEVICES", 0)  # the bound: none kept
    with enabled("cpu"):
        a, b = torch.device("cuda", 0), torch.device("cuda", 0)
        assert a is not b and a == b


def test_it_still_acts_as_torch_s_class(path: str) -> None:
    with enabled("cpu"):
        dev = torch.device("cpu")
        assert isinstance(dev, torch.device) and issubclass(REAL, torch.device)
        assert not isinstance("cpu", torch.device) and not issubclass(int, torch.device)
        assert torch.device == REAL and hash(torch.device) == hash(REAL) and torch.device != torch.dtype
        assert type(dev) in {torch.device} and torch.device.__name__ == "device"
        assert torch.device.__new__(torch.device, "cpu") == dev  # the class's own __new__, as before
        assert torch.device.__new__(torch.device, 0) == dev


# dynamo keeps the `torch.device` it first saw in its tables: a second enable() in one process gives it
# another stand-in, which it does not trace (fullgraph fails with "Unsupported method call"; known, both
# paths), so each path is compiled in a fresh interpreter
COMPILED = """
import importlib.util, sys, torch
import torchport.runtime as rt, torchport.runtime._args as args_mod
if sys.argv[1] != "python":
    spec = importlib.util.spec_from_file_location("torchport.runtime._speedups", sys.argv[1])
    args_mod.SPEEDUPS = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(args_mod.SPEEDUPS)
else:  # the fallback, also where the installed package has the extension
    args_mod.SPEEDUPS = None
rt.enable("cpu")
def f(x):
    return x.to(torch.device("cuda", 0)) + torch.ones(2, device=torch.device(0)) + x.to(torch.device("cuda"))
out = torch.compile(f, backend="eager", fullgraph=True)(torch.ones(2))
print("OUT", out.tolist(), type(torch.device).__mro__[1])
"""


def test_dynamo_traces_a_function_that_builds_devices(path: str, speedups: ModuleType) -> None:
    from runtime_testlib import run_python

    done = run_python(["-c", COMPILED, speedups.__file__ if path == "c" else "python"])
    assert done.returncode == 0, done.stderr[-3000:]
    base = "torchport.runtime._speedups.DeviceMeta" if path == "c" else "type"
    assert f"OUT [3.0, 3.0] <class '{base}'>" in done.stdout


def test_disabled_a_captured_stand_in_is_torch_s_call(path: str) -> None:
    with enabled("cpu"):
        captured = torch.device
        kept = captured("cuda", 0)
    assert captured("cuda", 0) == kept and captured("cpu") == REAL("cpu")
    assert _outcome(lambda: captured(0)) == _outcome(
        lambda: REAL(0)
    )  # torch's answer, not the target's device
