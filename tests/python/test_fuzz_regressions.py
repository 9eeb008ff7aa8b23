"""Every input in the committed regression corpus of the Atheris targets (fuzz/corpus/<target>/) still
passes its target's invariant: a bug the fuzzers found stays fixed. (The libFuzzer targets replay
theirs in .ci/run's fuzz step, and each of their findings also has a C++ unit test.)"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
TARGETS = sorted((REPO / "fuzz" / "python").glob("*_fuzz.py"))


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def test_every_python_target_has_a_regression_corpus() -> None:
    assert [t.stem for t in TARGETS] == ["config_fuzz", "device_string_fuzz", "probe_dump_fuzz"]
    for t in TARGETS:
        assert any((REPO / "fuzz" / "corpus" / t.stem).iterdir()), t.stem


@pytest.mark.parametrize("target", TARGETS, ids=lambda p: p.stem)
def test_the_regression_corpus_passes(target: Path) -> None:
    check = load(target).check
    inputs = sorted((REPO / "fuzz" / "corpus" / target.stem).iterdir())
    for path in inputs:
        check(path.read_bytes())
