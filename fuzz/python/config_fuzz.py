"""Atheris target for the configuration files: `[tool.torchport]` in pyproject.toml and torchport.toml.

Invariant: `torchport.config.load` returns a Config, None (a pyproject.toml without the table), or
raises ConfigError whose message starts with `path:line` (or `path:line:col`); nothing else.
Run: python fuzz/python/config_fuzz.py -max_total_time=60 [corpus dirs]
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["torchport"]):
    from torchport import config

_DIR = Path(tempfile.mkdtemp(prefix="tp_config_fuzz_"))


def check(data: bytes) -> None:
    if not data:
        return
    name = "pyproject.toml" if data[0] & 1 else "torchport.toml"
    path = _DIR / name
    path.write_bytes(data[1:])
    try:
        cfg = config.load(path)
    except config.ConfigError as e:
        if re.match(re.escape(str(path)) + r":\d+(:\d+)?: ", str(e)) is None:
            raise AssertionError(f"error without path:line: {e!r}") from None
        return
    if cfg is None:
        assert name == "pyproject.toml", "only a pyproject.toml may have no torchport table"
        return
    # Whatever was accepted turns into command-line flags without an error.
    config.to_flags(cfg, ["migrate", str(_DIR)])


def main() -> None:
    atheris.Setup(sys.argv, lambda data: check(bytes(data)))
    atheris.Fuzz()


if __name__ == "__main__":
    main()
