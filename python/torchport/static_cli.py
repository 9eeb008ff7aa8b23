"""`torchport analyze` and `torchport migrate`: configuration, then the C++ core.

1. `[tool.torchport]` / torchport.toml becomes core flags (torchport.config; the command line wins).
2. The C++ core does the work, the report page (`torchport-report/index.html` and `files/`)
   included. Without a report directory (analyze without -o) it is exec'd; otherwise it runs
   as a child process, and the front end prints where the page is.
3. `--object-storage` / `--modelarts` add the storage support after the core, and then write
   the page again (torchport.pages.migration), so that it shows the entry's added import.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from torchport._core import CoreNotFoundError, core_binary
from torchport.config import ConfigError, input_of
from torchport.config import apply as apply_config

# typing only for annotations: not imported at run time (every `torchport analyze` pays its imports first)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional, Sequence


def _value(args: Sequence[str], *names: str) -> Optional[str]:
    """The last value of an option (`--name V`, `--name=V`, `-nV`) before `--`, or None."""
    found: Optional[str] = None
    for i, a in enumerate(args):
        if a == "--":
            break
        for n in names:
            if a == n and i + 1 < len(args):
                found = args[i + 1]
            elif n.startswith("--") and a.startswith(n + "="):
                found = a[len(n) + 1 :]
            elif not n.startswith("--") and a.startswith(n) and len(a) > len(n):
                found = a[len(n) :]
    return found


def report_dir(command: str, args: Sequence[str]) -> Optional[Path]:
    """Where the core writes its reports for these arguments (None: it writes none)."""
    out = _value(args, "--output", "-o")
    if command == "analyze":
        return Path(out) if out else None
    given = input_of(args)
    if given is None:
        return None
    src = Path(given).resolve()
    if "--inplace" in args:
        if out:
            return Path(out) / "torchport-report"
        backup = _value(args, "--backup")
        base = Path(backup) if backup else src.parent / (src.name + ".torchport-backup")
        return base / "torchport-report"
    target = _value(args, "--target", "-t")
    if not out or not target:
        return None
    name = src.name if src.is_dir() else src.stem
    multi = "_multi" if "--distributed" in args else ""
    return Path(out) / f"{name or 'project'}_{target}{multi}" / "torchport-report"


def distributed_alias(argv: Sequence[str]) -> list[str]:
    """Ascend's spelling, `distributed INPUT -m FILE -t VAR [-o OUT] [--target T]`, as migrate's
    `--distributed --main FILE --model-var VAR` (--target defaults to npu, as Ascend's tool has
    only that target). -t is the model variable here, as in Ascend's tool."""
    out: list[str] = ["--distributed"]
    args = list(argv)
    has_target = False
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            out.extend(args[i:])
            break
        if a in ("-m", "-t") and i + 1 < len(args):
            out.extend(["--main" if a == "-m" else "--model-var", args[i + 1]])
            i += 2
            continue
        if a == "--target" or a.startswith("--target="):
            has_target = True
        out.append(a)
        i += 1
    if not has_target:
        out.extend(["--target", "npu"])
    return out


def _run_core(binary: str, argv: list[str]) -> int:
    """Runs the core and returns its exit status (posix_spawn and waitpid: subprocess's import would cost
    every `migrate -o` a few milliseconds more before the core starts). Ctrl-C reaches the core too (it is
    in the terminal's process group); this process waits for it to stop instead of leaving it behind."""
    pid = os.posix_spawn(binary, argv, os.environ)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(status)
        except KeyboardInterrupt:
            continue
        except ChildProcessError:
            return 4  # not ours to wait for any more: an internal error, as the exit codes say


def main(command: str, argv: Sequence[str]) -> int:
    try:
        args = apply_config(argv)
    except ConfigError as e:
        print(f"torchport {command}: error: {e}", file=sys.stderr)
        return 2
    if command == "analyze":
        from torchport.third_party import with_default_env

        args = with_default_env(args)
    storage: Optional[tuple[str, Optional[str]]] = None
    if command == "migrate":
        from torchport.cloud import wants_storage

        if wants_storage(args):
            from torchport.cloud import cli as cloud

            try:
                args, platform, entry = cloud.split(args)
            except cloud.StorageSetupError as e:
                print(f"torchport migrate: error: {e}", file=sys.stderr)
                return 2
            storage = (platform, entry)
    try:
        binary = core_binary()
    except CoreNotFoundError as e:
        print(f"torchport: error: {e}", file=sys.stderr)
        return 2
    helping = any(a in ("-h", "--help") for a in args)
    where = None if helping else report_dir(command, args)
    sys.stdout.flush()
    sys.stderr.flush()
    if where is None:
        if storage is not None and not helping:
            print(
                "torchport migrate: error: --object-storage/--modelarts need -o and --target", file=sys.stderr
            )
            return 2
        os.execv(binary, [binary, command, *args])
    kept: dict[Path, bytes] = {}
    if storage is not None:
        project = cloud.project_of(where, input_of(args) if "--inplace" in args else None)
        kept = cloud.keep_configs(project, storage[0])
    rc = _run_core(binary, [binary, command, *args])
    # 3 (incomplete: a file not migrated) still leaves a complete output tree and reports.
    if storage is not None and rc in (0, 1, 3) and (where / "report.json").is_file():
        quiet = "-q" in args or "--quiet" in args
        if cloud.finish(project, where, storage[0], storage[1], kept, quiet) != 0:
            return 2
        from torchport.pages.migration import write_migration_page

        try:
            write_migration_page(where)  # the entry file changed after the core wrote the page
        except (OSError, ValueError, KeyError) as e:
            print(
                f"torchport {command}: error: cannot write the report page in {where}: {e}", file=sys.stderr
            )
            return 2
    page = where / "index.html"
    if rc in (0, 1, 3) and page.is_file():
        if "-q" not in args and "--quiet" not in args and _value(args, "--format") in (None, "text"):
            print(f"report page: {page.absolute()}")  # absolute, as result: and reports:
    return rc
