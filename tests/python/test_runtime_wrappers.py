"""Every function torchport installs over a torch function keeps that function's attributes, as
functools.wraps gives them (issue 33 §5): torch reads some of them itself. torch 2.14's dynamo reads
`torch.cuda.use_mem_pool.__wrapped__` when it is imported, so a wrapper without it broke
`import torch._dynamo` (and every torch.optim optimizer, which imports dynamo) under `torchport run`."""

from __future__ import annotations

import inspect
import types
from pathlib import Path

import pytest
import torch

import torchport.runtime as rt
from runtime_testlib import run_torchport
from torchport.runtime._patcher import _MISSING

_ASSIGNED = ("__module__", "__name__", "__qualname__", "__doc__")


def _original(owner: object, name: str, before: object) -> object:
    """What owner.name was before enable(): its own entry, or what it inherited (TensorBase's Tensor.to)."""
    if before is not _MISSING:
        return getattr(before, "__func__", before) if isinstance(before, staticmethod) else before
    for base in getattr(owner, "__mro__", ())[1:]:
        if name in vars(base):
            return getattr(base, name)
    return None


@pytest.mark.parametrize("target", ["cpu", "mps"])
def test_every_installed_wrapper_keeps_the_wrapped_functions_attributes(target: str) -> None:
    rt.enable(target, check=False)
    try:
        s = rt._active
        checked = 0
        installed = {}
        for owner, name, before in s.patcher.records:
            new = inspect.getattr_static(owner, name)
            new = new.__func__ if isinstance(new, (staticmethod, classmethod)) else new
            orig = _original(owner, name, before)
            if type(new) is not types.FunctionType or isinstance(orig, type) or not callable(orig):
                continue
            where = f"{getattr(owner, '__name__', owner)}.{name}"
            installed[id(new)] = where
            assert hasattr(new, "__wrapped__"), where
            if new.__wrapped__ is not orig and new.__wrapped__ is not getattr(orig, "__func__", None):
                # one of our wrappers installed at a second path (torch.cuda.memory.X as torch.cuda.X)
                assert new.__qualname__ == getattr(orig, "__qualname__", None), where
                continue
            for attr in _ASSIGNED:
                if hasattr(orig, attr):  # a C method has no __module__: functools.wraps leaves the wrapper's
                    assert getattr(new, attr) == getattr(orig, attr), (where, attr)
            for key, value in getattr(orig, "__dict__", {}).items():
                if key != "__wrapped__":
                    assert new.__dict__.get(key) is value, (where, key)
            checked += 1
        assert checked > 100  # torch.cuda alone has ~80
        # what torch reads: the deprecation marker and the signature follow the original
        assert getattr(torch.cuda.memory_cached, "__deprecated__", None) is not None
        assert inspect.signature(torch.cuda.memory_allocated).parameters.keys() == {"device"}
    finally:
        rt.disable()


def test_use_mem_pool_keeps_its_wrapped_generator_function_chain() -> None:
    orig = torch.cuda.use_mem_pool
    rt.enable("cpu")
    try:
        assert torch.cuda.use_mem_pool is not orig and torch.cuda.use_mem_pool.__wrapped__ is orig
    finally:
        rt.disable()
    assert torch.cuda.use_mem_pool is orig


def test_dynamo_imports_and_an_optimizer_builds_under_torchport_run(tmp_path: Path) -> None:
    # the report: torch.optim imports torch._dynamo on the first param group; under torch 2.14 that
    # import read torch.cuda.use_mem_pool.__wrapped__ and failed
    script = tmp_path / "train.py"
    script.write_text(
        "import sys, torch\n"
        "assert 'torch._dynamo' not in sys.modules\n"
        "m = torch.nn.Linear(2, 2).cuda()\n"
        "opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "import torch._dynamo\n"
        "m(torch.ones(1, 2).cuda()).sum().backward()\n"
        "opt.step()\n"
        "print('ok', torch.compile(lambda a: a * 2, backend='eager')(torch.ones(2).cuda()).tolist())\n",
        encoding="utf-8",
    )
    done = run_torchport(["run", "--target", "cpu", "--quiet", str(script)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "ok [2.0, 2.0]"
