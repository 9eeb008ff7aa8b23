"""`torchport rehearse`: run a program migrated for npu / mlu / musa on this machine, on a CPU-backed
rehearsal copy of the vendor's device, and report what the real device would do differently."""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback
from typing import Mapping, Optional, Sequence

from torchport._command import OneLineParser
from torchport._leave import exit_code, leave
from torchport.rehearse.runtime import REHEARSE_TARGETS
from torchport.targets import unknown_target

USAGE = (
    "torchport rehearse -t {npu,mlu,musa} [--devices N] [--memory SIZE] [--strict] "
    "[--report FILE.json] [--vendor-torch-npu PATH|auto|off] (script.py | -m module) [args ...]\n"
    "       torchport rehearse --build [--verbose]"
)


def _error(msg: str) -> int:
    print(f"torchport rehearse: error: {msg}", file=sys.stderr)
    return 2


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="torchport rehearse",
        usage=USAGE,
        description=__doc__,
    )
    p.add_argument("--target", "-t", help="the device to rehearse: " + ", ".join(REHEARSE_TARGETS))
    p.add_argument(
        "--devices",
        type=int,
        default=None,
        help="number of devices (default 1; under torchrun the node's size: LOCAL_WORLD_SIZE, at least 8)",
    )
    p.add_argument("--memory", help="capacity of each device, e.g. 64GiB, 32GB, or a card preset")
    p.add_argument(
        "--strict",
        action="store_true",
        help="every CPU fallback is an error, as with the "
        "vendor's switch (TORCH_NPU_FALLBACK_CPU_DISABLE=1, ENABLE_FALLBACK_TO_CPU=0)",
    )
    p.add_argument("--report", metavar="FILE.json", help="write the summary as JSON")
    p.add_argument(
        "--vendor-torch-npu",
        metavar="PATH|auto|off",
        help="npu: run the vendor's torch_npu (its Python layer, with torchport's replacement of its "
        "compiled "
        "core) from PATH, the directory holding torch_npu/ (as pip install --target makes it); auto (the "
        "default): a torch_npu importable from sys.path if there is one, else torchport's stand-in; off: the "
        "stand-in. Default from TORCHPORT_VENDOR_TORCH_NPU",
    )
    p.add_argument("--build", action="store_true", help="build the rehearsal device now (for CI) and exit")
    p.add_argument("--verbose", action="store_true", help="with --build: show the compiler's output")
    p.add_argument("-m", dest="module", help="run a module as a script (python -m)")
    p.add_argument("program", nargs="*", help="script.py and its arguments")
    return p


_WITH_VALUE = ("--target", "-t", "--devices", "--memory", "--report", "--vendor-torch-npu")


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    """(our options, the program's arguments): ours end at the script or after `-m module`; everything
    after belongs to the program, options included."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-m":
            return argv[: i + 2], argv[i + 2 :]
        if a == "--":
            return argv[:i], argv[i + 1 :]
        if a in _WITH_VALUE:
            i += 2
            continue
        if not a.startswith("-"):
            return argv[:i], argv[i:]
        i += 1
    return argv, []


def default_devices(environ: Mapping[str, str]) -> int:
    """The devices of a rehearsal without --devices: one, or under torchrun (LOCAL_WORLD_SIZE set) the node's:
    as many as the ranks torchrun starts here, and never fewer than the 8 of a real Ascend/MLU/MUSA node, so
    that `--nproc_per_node=N` runs as written (rank r opens device r)."""
    try:
        local = int(environ.get("LOCAL_WORLD_SIZE", ""))
    except ValueError:
        return 1
    return max(local, 8) if local >= 1 else 1


def main(argv: Optional[Sequence[str]] = None) -> int:
    ours, rest = _split(list(sys.argv[1:] if argv is None else argv))
    args = _parser().parse_args(ours)
    args.program = rest
    from torchport.rehearse import _build

    if args.build:
        try:
            _build.load(verbose=args.verbose)
        except _build.BuildError as e:
            return _error(str(e))
        print(f"torchport rehearse: the rehearsal device is built ({_build.cache_root()})")
        return 0
    if args.target is None:
        return _error("--target is required (one of: " + ", ".join(REHEARSE_TARGETS) + ")")
    if args.target not in REHEARSE_TARGETS:
        return _error(unknown_target(args.target, REHEARSE_TARGETS))
    if args.devices is None:
        args.devices = default_devices(os.environ)
    if args.devices < 1:
        return _error(f"--devices must be at least 1, not {args.devices}")
    memory = -1
    if args.memory is not None:
        from torchport.rehearse.runtime import parse_size

        try:
            memory = parse_size(args.memory)
        except ValueError as e:
            return _error(f"--memory: {e}")
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    if args.module is None:
        if not program:
            return _error("no script given (torchport rehearse --target T script.py [args])")
        script = program[0]
        if not os.path.isfile(script):
            return _error(f"{script}: no such file")
    from torchport.rehearse import runtime, summary, vendor_npu

    if args.vendor_torch_npu is not None and args.target != "npu":
        return _error(f"--vendor-torch-npu is for --target npu, not {args.target}")
    try:
        sess = runtime.activate(
            args.target, args.devices, memory, args.strict, args.report, args.vendor_torch_npu
        )
    except (_build.BuildError, vendor_npu.VendorError) as e:
        return _error(str(e))
    if args.target == "npu":
        which = sess.vendor_package or (
            "torchport's stand-in (no vendor torch_npu: --vendor-torch-npu PATH or "
            "TORCHPORT_VENDOR_TORCH_NPU "
            "names one)"
        )
        print(f"torchport rehearse: torch_npu: {which}", file=sys.stderr)
    summary.install_exit_summary()
    code = 0
    try:
        if args.module is not None:
            sys.argv = [args.module, *program]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [script, *program[1:]]
            sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = exit_code(e)
    except BaseException:
        traceback.print_exc()
        code = 1
    summary.finish()
    # Leave without the C++ static teardown: backward passes ran on the rehearsal device's autograd
    # thread (and ranks hold gloo threads), which the interpreter's finalisation can abort with
    # "terminate called without an active exception" after the work is done (torchport._leave).
    leave(code)
