"""`torchport run nb.ipynb`: execute a notebook top to bottom in a fresh kernel, the redirect on in it.

The kernel is this Python (ipykernel), started in the notebook's directory as Jupyter starts it, with the
TORCHPORT_* variables of the command line. Before the first cell a hidden cell (no history, no execution
count, not in the written copy) names the cells for the log and loads the extension
(torchport/runtime/notebook.py); a target that cannot run here stops the run there, exit status 2, nothing
written. Cells run in order; the first one that raises stops the run, and the exit status is 1 (a cell's
`sys.exit(N)`: N, as for a script). After the last cell a hidden cell prints the summary and undoes the
redirect (which ends the --log file). The executed copy is written beside the notebook,
`NAME.torchport-TARGET.ipynb` (or --output), never over the input; cells after a failure have their outputs
and execution counts cleared there, so that every output in it is this run's.

nbclient, nbformat and ipykernel are imported only here: `pip install 'torchport[notebook]'`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import site
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Optional

import torchport

NEEDED = ("nbclient", "nbformat", "ipykernel")
KERNEL_NAME = "torchport-python"
EXIT_REFUSED = 2  # the redirect could not be enabled in the kernel (as for a script: the target cannot run)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class NotebookRunError(Exception):
    """The run could not start (a missing package, a broken notebook, an output path that is the input)."""


@dataclass
class Failure:
    """The cell that stopped the run."""

    number: int  # 1-based, every cell counted (markdown too), as ruff counts them
    count: int  # the kernel's execution count: IPython's traceback says `In[count]`
    ename: str
    evalue: str
    traceback: str
    exit_code: int

    def line(self) -> str:
        if self.ename == "SystemExit":
            return f"cell {self.number} (In[{self.count}]) called sys.exit({self.evalue})"
        what = f"{self.ename}: {self.evalue}" if self.evalue else self.ename
        return f"cell {self.number} (In[{self.count}]) failed: {what}"


def missing_packages() -> list[str]:
    return [name for name in NEEDED if importlib.util.find_spec(name) is None]


def default_output(path: str, target: str) -> str:
    """`nb.ipynb` -> `nb.torchport-cpu.ipynb`, beside it."""
    base = path[: -len(".ipynb")] if path.endswith(".ipynb") else path
    return f"{base}.torchport-{target}.ipynb"


def cell_names(nb: Any, notebook: str) -> dict[str, str]:
    """`In[k]` -> `nb.ipynb:cellN` for the k-th cell the kernel runs with history (nbclient sends every code
    cell that is not blank and not tagged skip-execution; the kernel counts those)."""
    names: dict[str, str] = {}
    k = 0
    for index, cell in enumerate(nb.cells):
        if _runs(cell):
            k += 1
            names[f"In[{k}]"] = f"{notebook}:cell{index + 1}"
    return names


def _runs(cell: Any) -> bool:
    return bool(
        cell.cell_type == "code"
        and cell.source.strip()
        and "skip-execution" not in cell.get("metadata", {}).get("tags", [])
    )


def kernel_env(exported: dict[str, str]) -> dict[str, str]:
    """The kernel's environment: ours, the TORCHPORT_* options, and the directory of this torchport on
    PYTHONPATH when it is not installed in site-packages (a source checkout): the kernel must import this
    torchport."""
    env = dict(os.environ)
    env.update(exported)
    parent = os.path.dirname(os.path.dirname(os.path.abspath(torchport.__file__)))
    sites = {os.path.abspath(p) for p in [*site.getsitepackages(), site.getusersitepackages()]}
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if parent not in sites and parent not in (os.path.abspath(p) for p in paths):
        env["PYTHONPATH"] = os.pathsep.join([parent, *paths])
    return env


def run_notebook(
    path: str,
    *,
    target: str,
    exported: dict[str, str],
    output: Optional[str],
    timeout: Optional[float],
    quiet: bool,
) -> int:
    """Execute the notebook at `path`; returns the exit status (0, the failing cell's, 2 when it cannot run).
    Raises NotebookRunError before anything runs."""
    missing = missing_packages()
    if missing:
        raise NotebookRunError(
            f"running a notebook needs {', '.join(NEEDED)} ({', '.join(missing)} not installed): "
            "pip install 'torchport[notebook]'"
        )
    import nbformat

    out = output if output is not None else default_output(path, target)
    if os.path.abspath(out) == os.path.abspath(path) or (os.path.exists(out) and os.path.samefile(out, path)):
        raise NotebookRunError(f"{out}: the executed copy would overwrite the notebook itself")
    out_dir = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(out_dir) or not os.access(out_dir, os.W_OK):
        raise NotebookRunError(f"{out}: cannot write the executed copy there (no such writable directory)")
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as e:  # noqa: BLE001 - broken JSON, not a notebook, an unreadable file: one line
        raise NotebookRunError(f"{path}: cannot read the notebook: {type(e).__name__}: {e}") from None
    name = os.path.basename(path)
    code, ran, failure, summary = _execute(nb, path, name, exported, timeout, quiet)
    if code == EXIT_REFUSED and failure is None:  # the redirect could not start: nothing ran, nothing written
        return code
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and index not in ran:  # not run: no output of an earlier run stays
            cell.outputs = []
            cell.execution_count = None
    try:
        _write(nb, out)
    except OSError as e:
        why = e.strerror or str(e)
        print(f"torchport run: error: cannot write the executed copy {out}: {why}", file=sys.stderr)
        out = "(not written)"
        code = code or 2
    if failure is not None and failure.traceback:
        print(failure.traceback.rstrip("\n"), file=sys.stderr)
    if summary:
        print(summary.rstrip("\n"), file=sys.stderr)
    cells = sum(1 for c in nb.cells if _runs(c))
    if failure is not None:
        rest = cells - len(ran)
        skipped = f"; {rest} later code cell(s) not run" if rest > 0 else ""
        print(f"torchport run: {path}: {failure.line()}{skipped}; executed copy: {out}", file=sys.stderr)
    else:
        print(f"torchport run: {path}: {len(ran)} code cell(s) ran on {target}; executed copy: {out}",
              file=sys.stderr)  # fmt: skip
    return code


def _execute(
    nb: Any, path: str, name: str, exported: dict[str, str], timeout: Optional[float], quiet: bool
) -> tuple[int, set[int], Optional[Failure], str]:
    """Runs the cells in a fresh kernel: (exit status, indexes of the cells run, the failure, the summary)."""
    from ipykernel.kernelspec import get_kernel_dict
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.utils import run_sync
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    ran: set[int] = set()
    failure: Optional[Failure] = None
    summary = ""
    with tempfile.TemporaryDirectory(prefix="torchport-kernel-") as kdir:
        # this Python's kernel, whatever kernels Jupyter has installed: the redirect must be in it
        spec_dir = os.path.join(kdir, KERNEL_NAME)
        os.makedirs(spec_dir)
        spec = get_kernel_dict(extra_arguments=["--IPKernelApp.log_level=ERROR"])
        with open(os.path.join(spec_dir, "kernel.json"), "w", encoding="utf-8") as f:
            json.dump(spec, f)
        # the asynchronous manager, as nbclient expects: a kernel that dies mid-cell is then noticed
        ksm = KernelSpecManager(kernel_dirs=[kdir])
        km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=ksm)
        client = NotebookClient(
            nb,
            km=km,
            timeout=timeout,
            kernel_name=KERNEL_NAME,
            resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}},
        )
        with client.setup_kernel(env=kernel_env(exported), cleanup_kc=True):
            setup = (
                "import torchport.runtime.notebook as _torchport_notebook\n"
                f"_torchport_notebook.headless_setup({json.dumps(json.dumps(cell_names(nb, name)))})\n"
                "del _torchport_notebook\n"
            )
            err = _hidden(client, setup)
            if err is not None:
                print(f"torchport run: error: {err} (the notebook did not run)", file=sys.stderr)
                return EXIT_REFUSED, ran, None, ""
            count = 0
            for index, cell in enumerate(nb.cells):
                if not _runs(cell):
                    continue
                count += 1
                try:
                    client.execute_cell(cell, index, execution_count=count)
                except CellExecutionError as e:
                    ran.add(index)
                    _echo(cell)
                    failure = _failure(index, count, cell, e.ename, e.evalue)
                    break
                except CellTimeoutError:
                    cell.execution_count = count  # nbclient sets it only for a cell that finished
                    run_sync(client.km.interrupt_kernel)()  # the cell stops; the summary can still come
                    ran.add(index)
                    _echo(cell)
                    late = f"did not finish within {timeout} s"
                    failure = Failure(index + 1, count, "timeout", late, "", 1)
                    break
                except DeadKernelError:
                    cell.execution_count = count
                    ran.add(index)
                    _echo(cell)
                    failure = Failure(index + 1, count, "the kernel died", "", "", 1)
                    break
                ran.add(index)
                _echo(cell)
            client.set_widgets_metadata()  # as nbclient's own execute() ends
            if failure is None or failure.ename != "the kernel died":
                try:
                    summary = _hidden(client, _REPORT.format(quiet=quiet), want_stdout=True) or ""
                except (CellTimeoutError, DeadKernelError) as e:  # the run's result stands without it
                    summary = f"torchport: no summary: the kernel did not answer ({type(e).__name__})"
    code = 0 if failure is None else failure.exit_code
    return code, ran, failure, summary


_REPORT = (
    "import torchport.runtime.notebook as _torchport_notebook\n"
    "_torchport_notebook.headless_report({quiet})\n"
    "del _torchport_notebook\n"
)


def _hidden(client: Any, code: str, want_stdout: bool = False) -> Optional[str]:
    """Runs `code` in the kernel as a cell of its own that the notebook does not get (appended to it for the
    time it runs, no history). Returns the error line (None: it ran), or with want_stdout, what it printed."""
    from nbclient.exceptions import CellExecutionError
    from nbformat.v4 import new_code_cell

    cell = new_code_cell(code)
    client.nb.cells.append(cell)
    index = len(client.nb.cells) - 1
    timeout, client.timeout = client.timeout, None  # --timeout is for the notebook's cells
    try:
        client.execute_cell(cell, index, store_history=False)
    except CellExecutionError as e:
        if e.ename == "UsageError":  # the extension's own one-line message
            return e.evalue[len("torchport: ") :] if e.evalue.startswith("torchport: ") else e.evalue
        return f"{e.ename}: {e.evalue}"
    finally:
        client.timeout = timeout
        client.nb.cells.pop(index)
    if want_stdout:
        return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")
    return None


def _echo(cell: Any) -> None:
    """A cell's printed output, on our stdout and stderr, as a script's would be."""
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            stream = sys.stderr if o.get("name") == "stderr" else sys.stdout
            stream.write(o.get("text", ""))
            stream.flush()


def _failure(index: int, count: int, cell: Any, ename: str, evalue: str) -> Failure:
    tb = ""
    for o in cell.get("outputs", []):
        if o.get("output_type") == "error":
            tb = _ANSI.sub("", "\n".join(o.get("traceback", [])))
    code = 1
    if ename == "SystemExit":  # sys.exit(N) in a cell ends the run with N, as for a script
        value = evalue.strip()
        if value in ("", "None"):
            code = 0
        elif re.fullmatch(r"-?\d+", value):
            code = int(value) & 0xFF
    return Failure(index + 1, count, ename, evalue, tb, code)


def _write(nb: Any, out: str) -> None:
    import nbformat

    directory = os.path.dirname(os.path.abspath(out))
    fd, tmp = tempfile.mkstemp(prefix=".torchport-", suffix=".ipynb", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            nbformat.write(nb, f)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as open() would create it, not mkstemp's 0600
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
