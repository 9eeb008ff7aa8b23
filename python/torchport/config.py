"""`[tool.torchport]` in pyproject.toml, or torchport.toml: the options of analyze and migrate.

The file is read here with the standard library's TOML parser (tomllib; tomli before Python
3.11) and turned into the core's command-line flags, so the C++ core has one way to be told
things and the command line always wins:

- scalar keys (target, torch-version, jobs) apply only when the flag is not on the command line;
- list keys (rules, exclude, ignore, per-file-ignores) come first, the command line's after them
  (for --rules, a later file wins);
- unsafe-fixes = true adds --unsafe-fixes (the default); false adds --no-unsafe-fixes;
- keep-device-flags = true adds --keep-device-flags (TP310 leaves the command line's flags).

The file is found from the INPUT upwards (a directory, or a file's directory): in each
directory torchport.toml first, then a pyproject.toml that has a [tool.torchport] table.
`--config FILE` names it, `--no-config` ignores every file.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# typing only for annotations: not imported at run time (every `torchport analyze` pays its imports first)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional, Sequence

# tomllib is imported when a configuration file is found (load()): most runs have none, and every
# `torchport analyze` / `migrate` pays this module's imports before the core starts.


class ConfigError(Exception):
    """A configuration problem, already formatted as `path:line: reason`."""


# key -> (the core flag, kind). Kinds: "str", "int", "bool", "list", "table".
KEYS: dict[str, tuple[str, str]] = {
    "target": ("--target", "str"),
    "torch-version": ("--torch-version", "str"),
    "jobs": ("--jobs", "int"),
    "specify-device": ("--specify-device", "bool"),
    "rules": ("--rules", "list"),
    "exclude": ("--exclude", "list"),
    "ignore": ("--ignore", "list"),
    "per-file-ignores": ("--per-file-ignores", "table"),
    "unsafe-fixes": ("--unsafe-fixes", "bool"),
    "keep-device-flags": ("--keep-device-flags", "bool"),
}
# Short spellings of the scalar flags, to see whether the command line already has them.
_ALIASES: dict[str, tuple[str, ...]] = {
    "--target": ("-t",),
    "--torch-version": ("-v",),
    "--jobs": ("-j",),
    "--specify-device": ("-s",),
}


class Config:
    """A configuration file and its checked values (a plain class: dataclasses' import costs every
    command a few milliseconds before the core starts)."""

    __slots__ = ("path", "values")

    def __init__(self, path: Path, values: Optional[dict[str, Any]] = None) -> None:
        self.path = path
        self.values: dict[str, Any] = {} if values is None else values

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and (self.path, self.values) == (other.path, other.values)

    def __repr__(self) -> str:
        return f"Config(path={self.path!r}, values={self.values!r})"


def _header(line: str) -> Optional[str]:
    """The dotted name of a `[table]` header line (quotes and spaces removed), else None."""
    m = re.match(r"^\s*\[\s*([^\[\]]+?)\s*\]", line)
    if not m or line.lstrip().startswith("[["):
        return None
    return ".".join(part.strip().strip("\"'") for part in m.group(1).split("."))


def _line_of(text: str, key: str, table: Optional[str]) -> int:
    """1-based line of `key = ...` in `[table]` (None: the top level) or of `[table.key]`."""
    current: Optional[str] = None
    key_line = re.compile(r"""^\s*(?:"%s"|'%s'|%s)\s*=""" % ((re.escape(key),) * 3))
    fallback = 1
    for i, line in enumerate(text.splitlines(), start=1):
        name = _header(line)
        if name is not None:
            current = name
            if table is not None and name == table:
                fallback = i
            if name == (f"{table}.{key}" if table else key):
                return i
            continue
        if current == table and key_line.match(line):
            return i
    return fallback


def _check(path: Path, text: str, table: Optional[str], values: dict[str, Any]) -> dict[str, Any]:
    where = f"[{table}]" if table else path.name
    for key, value in values.items():
        line = _line_of(text, key, table)
        if key not in KEYS:
            known = ", ".join(KEYS)
            raise ConfigError(f"{path}:{line}: unknown key '{key}' in {where} (known keys: {known})")
        kind = KEYS[key][1]
        ok = {
            "str": isinstance(value, str),
            "int": isinstance(value, int) and not isinstance(value, bool) and value > 0,
            "bool": isinstance(value, bool),
            "list": isinstance(value, list) and all(isinstance(v, str) for v in value),
            "table": isinstance(value, dict)
            and all(isinstance(v, list) and all(isinstance(c, str) for c in v) for v in value.values()),
        }[kind]
        if not ok:
            expected = {
                "str": "a string",
                "int": "a positive integer",
                "bool": "true or false",
                "list": "a list of strings",
                "table": 'a table of glob = ["CODE", ...]',
            }[kind]
            raise ConfigError(f"{path}:{line}: '{key}' must be {expected}")
    return values


def load(path: Path) -> Optional[Config]:
    """The torchport options in `path` (None: a pyproject.toml without [tool.torchport])."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        # TOML is UTF-8 (found by fuzz/python/config_fuzz.py: this was a traceback)
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise ConfigError(
            f"{path}:{line}:{col}: not UTF-8 (byte 0x{raw[e.start]:02x}); TOML files are UTF-8"
        ) from None
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python < 3.11 only
        import tomli as tomllib
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
        loc = f"{m.group(1)}:{m.group(2)}" if m else "1"
        raise ConfigError(f"{path}:{loc}: invalid TOML: {msg}") from None
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        if "torchport" not in tool:
            return None
        if not isinstance(tool["torchport"], dict):
            raise ConfigError(
                f"{path}:{_line_of(text, 'torchport', 'tool')}: [tool.torchport] must be a table"
            )
        return Config(path, _check(path, text, "tool.torchport", tool["torchport"]))
    return Config(path, _check(path, text, None, data))


def find(start: Path) -> Optional[Config]:
    """The first configuration from `start` (a directory or a file) upwards."""
    here = start.resolve()
    if not here.is_dir():
        here = here.parent
    for d in (here, *here.parents):
        for name in ("torchport.toml", "pyproject.toml"):
            candidate = d / name
            if candidate.is_file():
                cfg = load(candidate)
                if cfg is not None:
                    return cfg
    return None


def _has_flag(argv: Sequence[str], flag: str) -> bool:
    names = (flag, *_ALIASES.get(flag, ()))
    for a in argv:
        if a == "--":
            break
        if a in names or any(a.startswith(n + "=") for n in names if n.startswith("--")):
            return True
        if any(a.startswith(n) and len(a) > len(n) and not n.startswith("--") for n in names):
            return True  # -tnpu
    return False


def input_of(argv: Sequence[str]) -> Optional[str]:
    """The positional INPUT of analyze/migrate (the first non-option argument)."""
    takes_value = {
        "--target",
        "-t",
        "--torch-version",
        "-v",
        "--jobs",
        "-j",
        "--rules",
        "-r",
        "--output",
        "-o",
        "--format",
        "--backup",
        "--exclude",
        "--ignore",
        "--per-file-ignores",
        "--config",
        "--main",
        "--model-var",
        "--per-rank-batch",
    }
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--":
            continue
        if a in takes_value:
            skip = True
            continue
        if a.startswith("-"):
            continue
        return a
    return None


def to_flags(cfg: Config, argv: Sequence[str]) -> list[str]:
    """The core flags the configuration adds in front of `argv` (which wins), as `--flag=value`
    (a repeatable option given `--flag value` would also take the INPUT after it)."""
    flags: list[str] = []
    base = cfg.path.parent
    for key, value in cfg.values.items():
        flag, kind = KEYS[key]
        if kind in ("str", "int"):
            if not _has_flag(argv, flag):
                flags.append(f"{flag}={value}")
        elif kind == "bool":
            if value and not _has_flag(argv, flag):
                flags.append(flag)
            elif not value and key == "unsafe-fixes" and not _has_flag(argv, flag):
                # Applied by default: `unsafe-fixes = false` leaves them out.
                if not _has_flag(argv, "--no-unsafe-fixes"):
                    flags.append("--no-unsafe-fixes")
        elif kind == "list":
            for v in value:
                # Rules files are relative to the configuration file; globs to the INPUT.
                flags.append(f"{flag}={(base / v).resolve() if key == 'rules' else v}")
        else:
            for glob, codes in value.items():
                flags.append(f"{flag}={glob}:{','.join(codes)}")
    return flags


def apply(argv: Sequence[str]) -> list[str]:
    """argv of `analyze`/`migrate` (after the subcommand) with the configuration merged in.

    Removes --config FILE / --no-config, which only this layer understands.
    """
    args = list(argv)
    explicit: Optional[str] = None
    use = True
    rest: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--no-config":
            use = False
        elif a == "--config" and i + 1 < len(args):
            explicit = args[i + 1]
            i += 1
        elif a.startswith("--config="):
            explicit = a.split("=", 1)[1]
        else:
            rest.append(a)
        i += 1
    if not use or any(a in ("-h", "--help") for a in rest):
        return rest
    if explicit is not None:
        cfg = load(Path(explicit))
        if cfg is None:
            raise ConfigError(f"{explicit}: no [tool.torchport] table")
    else:
        target = input_of(rest)
        cfg = find(Path(target)) if target is not None and Path(target).exists() else None
    if cfg is None:
        return rest
    return to_flags(cfg, rest) + rest
