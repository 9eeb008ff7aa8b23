"""The redirect in a live Jupyter / IPython kernel: `%load_ext torchport` and the `%torchport` line magic.

- ``%load_ext torchport`` turns the redirect on for the kernel, with the target from $TORCHPORT_TARGET (else
  ``auto``) and the other TORCHPORT_* options, as ``import torchport.auto`` does; ``import torchport.auto`` in
  a cell does the same and also brings the magic.
- ``%torchport npu`` (any target of ``torchport targets`` that runs here, or ``auto``) switches the target:
  the redirect is undone and enabled again for the new target; when the new target cannot run here, the one
  before stays on.
- ``%torchport log`` prints the per-call log so far, as ``torchport run --log FILE`` writes it, with each
  cell named as IPython names it in tracebacks (``In[3]:2`` is line 2 of the cell run third), and under
  ``torchport run nb.ipynb`` by its place in the notebook (``nb.ipynb:cell5:2``, cells counted from 1,
  markdown cells included, as ruff counts them).
- ``%torchport off`` undoes the redirect (``torchport.runtime.disable()``: every patched attribute,
  environment variable and import hook is put back); ``%torchport on`` enables it again from the
  environment; ``%torchport`` alone says what is on.

Importing this module imports neither IPython nor torch: the functions below do, when a kernel calls them.
"""

from __future__ import annotations

import difflib
import json
import sys
from typing import Any, Optional

import torchport.runtime as rt
from torchport.targets import (
    MIGRATION_TARGETS,
    TARGET_NAMES,
    TargetUnavailable,
    get_target,
    missing_package_message,
    vendor_package_missing,
)

__all__ = ["attach", "load_ipython_extension", "unload_ipython_extension"]

# `%torchport WORD`: the words that are not a target
_COMMANDS = ("log", "off", "on", "status")

# the shell the magic is registered in (None: not attached)
_shell: Any = None
# `In[k]` -> the cell's name in the notebook file (set by `torchport run nb.ipynb`, empty in a live kernel)
_cell_names: dict[str, str] = {}
# the logs of the redirects this kernel had before the current one (`%torchport off`, a switch of target)
_earlier: list[str] = []


def _session() -> Any:
    """The active redirect (torchport.runtime's session object), or None."""
    return rt._active


def _disable() -> None:
    """Undo the redirect, keeping its log for `%torchport log`."""
    session = _session()
    if session is not None and (session.log.sites or session.log.notes):
        head = f"# an earlier redirect in this kernel: target {session.target.name}\n"
        _earlier.append(head + session.log.text())
    rt.disable()


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext torchport`: register `%torchport` and turn the redirect on from the environment (or keep the
    one `import torchport.auto` or the .pth hook turned on)."""
    attach(ipython)
    if not rt.is_enabled():
        # torch first: when the .pth hook is installed and $TORCHPORT_TARGET is set, importing torch enables
        # the redirect from the same variables; it is then adopted below rather than enabled twice
        import torch  # noqa: F401

    if rt.is_enabled():
        _adopt()
        _print_status()
        return
    _enable(rt.env_target())


def unload_ipython_extension(ipython: Any) -> None:
    """`%unload_ext torchport`: the redirect is undone and `%torchport` removed."""
    global _shell
    _disable()
    magics = getattr(getattr(ipython, "magics_manager", None), "magics", {}).get("line", {})
    magics.pop("torchport", None)
    _shell = None
    print("torchport: the redirect is off and %torchport is removed")


def attach(ipython: Any) -> None:
    """Register `%torchport` in `ipython` (once) and make the active redirect, if any, record its call sites
    with cell names (`import torchport.auto` calls this when it runs in a kernel)."""
    global _shell
    if _shell is not ipython:
        ipython.register_magic_function(_magic, magic_kind="line", magic_name="torchport")
        _shell = ipython
    if rt.is_enabled():
        _adopt()


def headless_setup(cell_names_json: str) -> None:
    """What `torchport run nb.ipynb` runs in the kernel before the first cell: the cell names, then the
    extension (raises UsageError when the target cannot run here)."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("torchport: headless_setup() runs inside an IPython kernel")
    _cell_names.clear()
    _cell_names.update(json.loads(cell_names_json))
    shell.extension_manager.load_extension("torchport")
    if not rt.is_enabled():  # loaded before, then switched off: on again, from the environment
        _enable(rt.env_target())


def headless_report(quiet: bool) -> None:
    """What `torchport run nb.ipynb` runs in the kernel after the last cell: the summary (unless quiet) on
    stdout, then the redirect is undone, which ends the --log file with its summary block."""
    session = _session()
    if session is not None and not quiet and (session.log.sites or session.log.notes):
        if session.log.prints_summary():
            print(session.log.summary())
    rt.disable()


# --- the magic ---------------------------------------------------------------------------------------------


def _magic(line: str) -> None:
    """%torchport [TARGET | log | off | on | status]

    Redirect the CUDA calls of this kernel to TARGET (npu, mlu, musa, xpu, mps, hpu, cpu or auto), show the
    per-call log so far (log), undo the redirect (off), enable it again from $TORCHPORT_TARGET (on), or say
    what is on (no argument, or status). See docs/runtime.md ("In a notebook")."""
    words = line.split()
    if len(words) > 1:
        _usage(f"%torchport takes one word, not {len(words)}: {line.strip()!r}")
    word = words[0] if words else "status"
    if word == "status":
        _print_status()
    elif word == "log":
        _print_log()
    elif word == "off":
        was = rt.current_target()
        _disable()
        print(
            "torchport: the redirect is off: torch.cuda and every patched function are the originals again"
            if was is not None
            else "torchport: the redirect was not on"
        )
    elif word == "on":
        _enable(rt.env_target())
    elif word in TARGET_NAMES:
        _enable(word)
    elif word in MIGRATION_TARGETS:  # `torchport targets` lists it: say what the runtime has instead
        _usage(
            f"{word!r} is a migrate target (code rewritten to be device-agnostic); at run time "
            "`%torchport auto` redirects CUDA to the accelerator that is present, else cpu"
        )
    else:
        close = difflib.get_close_matches(word, [*TARGET_NAMES, *_COMMANDS], n=1, cutoff=0.5)
        hint = f"did you mean '{close[0]}'? " if close else ""
        _usage(
            f"unknown target or command {word!r}; {hint}choose a target ({', '.join(TARGET_NAMES)}) "
            f"or one of: {', '.join(_COMMANDS)}"
        )


def _usage(message: str) -> None:
    from IPython.core.error import UsageError

    raise UsageError(f"torchport: {message}")


def _enable(target: str) -> None:
    """Turn the redirect on for `target`, switching from the current one; when the new target cannot run here,
    the current one stays on."""
    before = _session()
    if before is not None and target != "auto" and before.target.name == target:
        _print_status()
        return
    if target != "auto":  # a missing vendor package is known without importing anything: nothing is undone
        t = get_target(target)
        if vendor_package_missing(t):
            _usage(missing_package_message(t) + _kept(before))
    options = rt.env_options()
    previous: Optional[tuple[str, dict[str, Any]]] = None
    if before is not None:
        previous = (_name_for_enable(before), _options_of(before, options))
        _disable()
    try:
        rt.enable(target, track_sites=True, **options)
    except (TargetUnavailable, KeyError, ValueError, OSError) as e:
        if previous is not None:  # the device is absent (known only once the package is imported): back
            rt.enable(previous[0], track_sites=True, **previous[1])
            _adopt()
        text = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        _usage(f"{text}{_kept(before)}")
    _adopt()
    _print_status()


def _kept(before: Any) -> str:
    return "" if before is None else f" (the redirect to {before.target.name} stays on)"


def _name_for_enable(session: Any) -> str:
    return "auto" if session.target.device_type == "cuda" else str(session.target.name)


def _options_of(session: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The options the session was enabled with, where the session knows them; the environment's otherwise."""
    out = dict(options)
    out["strict"] = session.strict
    out["cuda_available"] = session.cuda_available
    return out


def _adopt() -> None:
    """The active session, as the kernel wants it: call sites recorded (for `%torchport log`), named by cell,
    no summary on the kernel's stderr at exit (`%torchport log` and `torchport run` show it). A session that
    does not record (the .pth hook's or `import torchport.auto`'s without TORCHPORT_LOG) installed the
    wrappers that do not look up call sites: it is enabled again, same target and options, recording."""
    session = _session()
    if session is None:
        return
    if not session.log.track:
        name, options = _name_for_enable(session), _options_of(session, rt.env_options())
        rt.disable()
        rt.enable(name, track_sites=True, **options)
        session = _session()
    session.log.label = _cell_label
    session.print_summary = False


def _cell_label(filename: str) -> str:
    """`In[3]` for the code of the cell run third (as IPython names it in tracebacks), or its name in the
    notebook under `torchport run`; any other file keeps its name."""
    shell = _shell
    compiler = getattr(shell, "compile", None)
    fmt = getattr(compiler, "format_code_name", None)
    if fmt is None:
        return filename
    try:
        named = fmt(filename)
    except Exception:  # noqa: BLE001 - a name is only cosmetic: keep the file name
        return filename
    if not named:
        return filename
    return _cell_names.get(named[1], named[1])


def _print_status() -> None:
    session = _session()
    if session is None:
        print("torchport: the redirect is off (`%torchport cpu`, or any target, turns it on)")
        return
    t = session.target
    if t.device_type == "cuda":
        print("torchport: on, target auto: CUDA is present here, nothing is redirected")
        return
    c = session.log.counts()
    total = sum(c.values())
    print(
        f"torchport: on, CUDA calls in this kernel run on {t.name} ({t.title}); {total} redirected call "
        f"site(s) so far: {c['match']} match, {c['modified']} modified, {c['mismatch']} mismatch. "
        "`%torchport log` lists them, `%torchport off` undoes the redirect"
    )


def _print_log() -> None:
    for text in _earlier:
        sys.stdout.write(text)
    session = _session()
    if session is None:
        if not _earlier:
            print("torchport: the redirect is off and was never on: no log (`%torchport cpu` turns it on)")
        return
    if _earlier:
        sys.stdout.write(f"# target {session.target.name} (on)\n")
    sys.stdout.write(session.log.text())
    if session.log.path:
        print(f"# the log file: {session.log.path}")
