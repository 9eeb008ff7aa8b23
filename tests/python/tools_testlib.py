"""Loads a script of tools/ as a module, for the tests that check it or use its functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def load_tool(name: str, tools_on_path: bool = False) -> ModuleType:
    """tools/<name>.py as the module `name` (registered in sys.modules, which dataclasses look
    up); `tools_on_path` also puts tools/ on sys.path, for a tool that imports its siblings."""
    if tools_on_path and str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
