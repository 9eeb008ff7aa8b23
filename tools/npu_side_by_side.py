#!/usr/bin/env python3
"""The same unchanged CUDA scripts run two ways on the npu rehearsal device with the vendor's torch_npu
(issue 31 §3): the vendor's runtime patch and torchport's runtime redirection, side by side.

- `transfer_to_npu`: `torchport rehearse --target npu --vendor-torch-npu DIR LAUNCHER script.py args`, where
  LAUNCHER imports `torch_npu` and `torch_npu.contrib.transfer_to_npu` and then runs the script with runpy,
  as `python script.py args` would (its directory first on sys.path);
- `torchport`: `torchport rehearse --target npu --vendor-torch-npu DIR -m torchport run --target npu
  script.py args` (the way tests/python/test_runtime_coverage.py composes the two).

Scripts: examples/cuda_project/train.py, the migrate end-to-end scripts (tests/fixtures/e2e_scripts), issue
33's idioms (tests/python/fixtures/runtime/cuda_idioms.py), and a probe that runs the `call` of every row of
the runtime coverage table (data/runtime/coverage.json): per call, served (the type of its value) or raised
(the exception). Per script: the exit status and the losses (`step N loss X` lines) each way.

Writes data/runtime/npu_side_by_side.json (what was measured, with the torch and torch_npu versions) and
docs/npu-side-by-side.md (generated from it). The runs take minutes, so CI does not repeat them:
`--check` only renders the page from the JSON and fails when it is stale, and
tests/python/test_npu_side_by_side.py runs the probe both ways and asserts the issue's invariant (every call
transfer_to_npu serves, torchport serves, or data/runtime/npu_side_by_side_exceptions.json says why not).

Usage: tools/npu_side_by_side.py [--vendor DIR] [--only [NAME ...]] | --check
(`--only NAME ...` reruns those scripts, or `probe`, and keeps the rest; `--only` alone re-renders the page.)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data/runtime/npu_side_by_side.json"
EXCEPTIONS = ROOT / "data/runtime/npu_side_by_side_exceptions.json"
DOC = ROOT / "docs/npu-side-by-side.md"
COVERAGE = ROOT / "data/runtime/coverage.json"
VENDOR = ROOT / "build/vendor-torch-npu"
WAYS = ("transfer_to_npu", "torchport")
TIMEOUT = 600

LAUNCHER = '''\
"""Runs a CUDA script under the vendor's runtime patch, as `python script.py args` would. A child started
with the spawn method imports the script, not this launcher: its command line gets the two imports too, run
after the rehearsal device is on in the child and before the script, as they would be at the script's top."""
import multiprocessing.spawn as mps
import os, runpy, sys
import torch_npu  # noqa: F401
from torch_npu.contrib import transfer_to_npu  # noqa: F401
_command_line = mps.get_command_line
IMPORTS = "; import torch_npu; from torch_npu.contrib import transfer_to_npu; spawn_main("


def get_command_line(**kwds):
    cmd = list(_command_line(**kwds))
    i = cmd.index("-c") + 1
    cmd[i] = cmd[i].replace("; spawn_main(", IMPORTS, 1)
    return cmd


mps.get_command_line = get_command_line
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
runpy.run_path(script, run_name="__main__")
'''

# The probe: every coverage row's call, in one process, as tests/python/test_runtime_coverage.py runs them
# (the same globals: x, buf, _scripted_cuda). Writes {api: {"served": type} | {"raised": "Class: msg"}}.
PROBE = """\
import ast, io, json, os, sys, tempfile, traceback  # noqa: F401 - the calls use them
import torch
import torch.utils.data
import torch.utils._triton
import torch.cuda.amp.common
x = torch.ones(2)
_b = io.BytesIO()
torch.save(torch.ones(2), _b)
buf = _b.getvalue()


def _scripted_cuda(a: torch.Tensor) -> torch.Tensor:
    return a + torch.ones(2, device="cuda")


def _run(call, env, filename):
    tree = ast.parse(call, filename, "exec")
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        exec(compile(ast.Module(body=tree.body[:-1], type_ignores=[]), filename, "exec"), env)
        return eval(compile(ast.Expression(body=last.value), filename, "eval"), env)
    exec(compile(tree, filename, "exec"), env)
    return None


out = {}
for i, row in enumerate(json.loads(open(sys.argv[1]).read())):
    if not row["call"] or ("since" in row and not hasattr(torch.cuda, row["api"].rsplit(".", 1)[1])):
        continue
    try:
        value = _run(row["call"], globals(), f"<row {i}>")
        t = type(value)
        name = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
        out[row["api"]] = {"served": name}
        del value
    except BaseException as e:  # noqa: BLE001 - each call's outcome is the result
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        out[row["api"]] = {"raised": f"{type(e).__name__}: {msg[:200]}"}
with open(sys.argv[2], "w") as f:
    json.dump(out, f, indent=1, sort_keys=True)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scripts() -> list[tuple[str, Path, list[str]]]:
    """(name, script, arguments): the CUDA scripts torchport already runs in its tests."""
    e2e = ROOT / "tests/fixtures/e2e_scripts"
    out = [("examples/cuda_project", ROOT / "examples/cuda_project/train.py", ["--steps", "3"])]
    # resume_checkpoint resumes a checkpoint saved on CUDA (fixtures/runtime/make_cuda_checkpoint.py)
    out += [
        (f"e2e/{p.stem}", p, ["<ckpt>"] if p.stem == "resume_checkpoint" else [])
        for p in sorted(e2e.glob("*.py"))
    ]
    out.append(("issue 33 idioms", ROOT / "tests/python/fixtures/runtime/cuda_idioms.py", ["<port>"]))
    return out


def command(way: str, vendor: Path, script: Path, args: list[str], workdir: Path) -> list[str]:
    head = [
        sys.executable,
        "-m",
        "torchport",
        "rehearse",
        "--target",
        "npu",
        "--vendor-torch-npu",
        str(vendor),
    ]
    if "ddp" in script.stem:
        head += ["--devices", "2"]
    if way == "transfer_to_npu":
        launcher = workdir / "t2n_launch.py"
        launcher.write_text(LAUNCHER, encoding="utf-8")
        return [*head, str(launcher), str(script), *args]
    return [*head, "-m", "torchport", "run", "--target", "npu", "--quiet", str(script), *args]


def environment() -> dict[str, str]:
    env = dict(os.environ, E2E_NO_COMPILE="1", OMP_NUM_THREADS="1", MASTER_PORT=str(free_port()))
    env.pop("TORCHPORT_REHEARSE_CONFIG", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def last_error(stderr: str) -> Optional[str]:
    """The exception line of the last traceback in stderr."""
    lines = stderr.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("Traceback (most recent call last)"):
            tail = [ln for ln in lines[i + 1 :] if ln and not ln.startswith((" ", "torchport", "["))]
            return tail[0][:300] if tail else None
    return None


def run_script(way: str, vendor: Path, script: Path, args: list[str], workdir: Path) -> dict[str, Any]:
    if "<ckpt>" in args:
        ckpt = workdir / "cuda_ckpt.pt"
        if not ckpt.is_file():
            make = ROOT / "tests/python/fixtures/runtime/make_cuda_checkpoint.py"
            subprocess.run([sys.executable, str(make), str(ckpt)], check=True, capture_output=True)
        args = [str(ckpt) if a == "<ckpt>" else a for a in args]
    args = [str(free_port()) if a == "<port>" else a for a in args]
    try:
        p = subprocess.run(
            command(way, vendor, script, args, workdir), cwd=workdir, capture_output=True, text=True,
            check=False, timeout=TIMEOUT, env=environment(),
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"exit": None, "error": f"no exit within {TIMEOUT} s", "losses": []}
    got: dict[str, Any] = {
        "exit": p.returncode,
        "losses": [float(m.group(1)) for m in re.finditer(r"^step \d+ loss (\S+)$", p.stdout, re.M)],
    }
    if p.returncode != 0:
        got["error"] = last_error(p.stderr) or p.stderr.strip().splitlines()[-1:]
    idioms = [ln for ln in p.stdout.splitlines() if ln.startswith("IDIOMS=")]
    if idioms:
        got["idioms"] = {
            k: (v if isinstance(v, str) and v.startswith("error: ") else "served")
            for k, v in json.loads(idioms[0][len("IDIOMS=") :]).items()
        }
    return got


def run_probe(way: str, vendor: Path, workdir: Path) -> dict[str, dict[str, str]]:
    """Every coverage row's call, one way: {api: {"served": type} | {"raised": "Class: message"}}."""
    rows = json.loads(COVERAGE.read_text(encoding="utf-8"))["rows"]
    (workdir / "rows.json").write_text(json.dumps(rows), encoding="utf-8")
    probe = workdir / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    out = workdir / f"probe-{way}.json"
    cmd = command(way, vendor, probe, [str(workdir / "rows.json"), str(out)], workdir)
    p = subprocess.run(
        cmd, cwd=workdir, capture_output=True, text=True, check=False, timeout=TIMEOUT, env=environment()
    )
    if not out.is_file():
        raise RuntimeError(f"the probe ({way}) wrote nothing: exit {p.returncode}\n{p.stderr[-3000:]}")
    res: dict[str, dict[str, str]] = json.loads(out.read_text(encoding="utf-8"))
    return res


def served(outcome: Optional[dict[str, str]]) -> bool:
    return outcome is not None and "served" in outcome


def exceptions() -> dict[str, str]:
    """The calls transfer_to_npu serves and torchport refuses on purpose: {api: why}."""
    data: dict[str, str] = json.loads(EXCEPTIONS.read_text(encoding="utf-8"))["calls"]
    return data


def bugs(probe: dict[str, dict[str, dict[str, str]]]) -> list[str]:
    """The issue's invariant: the calls transfer_to_npu serves and torchport does not, without a listed
    reason."""
    listed = exceptions()
    t2n, tp = probe["transfer_to_npu"], probe["torchport"]
    return sorted(a for a in t2n if served(t2n[a]) and not served(tp.get(a)) and a not in listed)


def versions(vendor: Path) -> dict[str, str]:
    import torch

    ver = (vendor / "torch_npu/version.py").read_text(encoding="utf-8")
    m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", ver)
    return {"torch": torch.__version__, "torch_npu": m.group(1) if m else "?"}


# ---- the page ----


def _cell(o: Optional[dict[str, str]]) -> str:
    if o is None:
        return "—"
    if "served" in o:
        return f"served ({o['served']})"
    return "raised `" + o["raised"].replace("|", "\\|").replace("`", "'") + "`"


def _losses(r: dict[str, Any]) -> str:
    if r.get("idioms"):
        bad = sorted(k for k, v in r["idioms"].items() if v != "served")
        n = len(r["idioms"])
        return f"{n - len(bad)} of {n} idioms served" + (f" (not: {', '.join(bad)})" if bad else "")
    return ", ".join(str(v) for v in r["losses"]) or "—"


def _outcome(r: dict[str, Any]) -> str:
    if r["exit"] == 0:
        return "exit 0"
    err = str(r.get("error") or "").replace("|", "\\|").replace("`", "'")
    return f"exit {r['exit']}: `{err}`" if err else f"exit {r['exit']}"


def render(data: dict[str, Any]) -> str:
    listed = exceptions()
    t2n, tp = data["probe"]["transfer_to_npu"], data["probe"]["torchport"]
    apis = sorted(set(t2n) | set(tp))
    both = [a for a in apis if served(t2n.get(a)) and served(tp.get(a))]
    only_tp = [a for a in apis if served(tp.get(a)) and not served(t2n.get(a))]
    only_t2n = [a for a in apis if served(t2n.get(a)) and not served(tp.get(a))]
    neither = [a for a in apis if not served(t2n.get(a)) and not served(tp.get(a))]
    v = data["versions"]
    out = [
        "# transfer_to_npu and torchport run, side by side on the rehearsal device",
        "",
        "<!-- GENERATED by tools/npu_side_by_side.py from data/runtime/npu_side_by_side.json: "
        "do not edit by hand. -->",
        "",
        "The same unchanged CUDA scripts run two ways on the npu rehearsal device with the vendor's own "
        f"torch_npu {v['torch_npu']} (torch {v['torch']}; [rehearse.md](rehearse.md#the-vendors-torch_npu)):",
        "",
        "- **transfer_to_npu**: `torchport rehearse --target npu --vendor-torch-npu DIR launch.py script.py "
        "args`, where launch.py does `import torch_npu; from torch_npu.contrib import transfer_to_npu` and "
        "runs the script with runpy;",
        "- **torchport**: `torchport rehearse --target npu --vendor-torch-npu DIR -m torchport run "
        "--target npu script.py args`.",
        "",
        "Measured by `python tools/npu_side_by_side.py` (minutes: CI does not repeat it; `--only NAME` "
        "reruns one script, `--only probe` the probe; "
        "tests/python/test_npu_side_by_side.py reruns the probe both ways and asserts the invariant below). "
        "The static comparison of the two is [transfer-to-npu.md](transfer-to-npu.md).",
        "",
        "## The calls each one serves",
        "",
        "The probe runs the `call` of every row of the runtime coverage table (data/runtime/coverage.json, "
        "[runtime.md](runtime.md#coverage-table)) in one process, each way. Served: the call returned (its "
        "value's type in brackets); raised: the exception it raised. A call can be served and still answer "
        "differently (transfer_to_npu's `torch.cuda.DoubleTensor` is a FloatTensor).",
        "",
        "| | count |",
        "|---|---|",
        f"| calls probed | {len(apis)} |",
        f"| served by both | {len(both)} |",
        f"| served by torchport only | {len(only_tp)} |",
        f"| served by transfer_to_npu only | {len(only_t2n)} |",
        f"| served by neither | {len(neither)} |",
        "",
        "**Anything transfer_to_npu serves that torchport does not is a bug in torchport** (issue 31), "
        "unless data/runtime/npu_side_by_side_exceptions.json says why torchport refuses it on purpose "
        f"({len(listed)} listed). The calls served by transfer_to_npu only:",
        "",
        "| call | transfer_to_npu | torchport | why |",
        "|---|---|---|---|",
    ]
    for a in only_t2n:
        why = listed.get(a, "**a bug in torchport: not yet fixed**")
        out.append(f"| `{a}` | {_cell(t2n.get(a))} | {_cell(tp.get(a))} | {why} |")
    if not only_t2n:
        out.append("| (none) | | | |")
    for title, names in (("served by torchport only", only_tp), ("served by neither", neither)):
        out += ["", f"### Calls {title}", "", "| call | transfer_to_npu | torchport |", "|---|---|---|"]
        out += [f"| `{a}` | {_cell(t2n.get(a))} | {_cell(tp.get(a))} |" for a in names]
    out += [
        "",
        "### Calls served by both",
        "",
        ", ".join(f"`{a}`" for a in both) + ".",
        "",
        "## The losses each one gives",
        "",
        "Each script with its arguments, unchanged, run each way (`E2E_NO_COMPILE=1`; the `ddp_train` runs "
        "with `--devices 2`, its 2 ranks spawned by the script). Losses are the script's `step N loss X` "
        "lines; for issue 33's idioms, how many of them gave a value.",
        "",
        "| script | transfer_to_npu | losses | torchport | losses |",
        "|---|---|---|---|---|",
    ]
    for name, r in data["scripts"].items():
        a, b = r["transfer_to_npu"], r["torchport"]
        out.append(f"| {name} | {_outcome(a)} | {_losses(a)} | {_outcome(b)} | {_losses(b)} |")
    notes = data.get("notes") or []
    if notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--vendor",
        type=Path,
        default=VENDOR,
        help="the vendor's torch_npu (gen_vendor_npu_core.py --install)",
    )
    ap.add_argument(
        "--only", nargs="*", help="rerun these scripts (names as on the page) or 'probe'; keep the rest"
    )
    ap.add_argument(
        "--check", action="store_true", help="fail when docs/npu-side-by-side.md is stale (no runs)"
    )
    ns = ap.parse_args(argv)
    if ns.check:
        want = render(json.loads(DATA.read_text(encoding="utf-8")))
        if DOC.read_text(encoding="utf-8") != want:
            print(
                f"{DOC.relative_to(ROOT)} is stale: run python tools/npu_side_by_side.py --only",
                file=sys.stderr,
            )
            return 1
        return 0
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8")) if DATA.is_file() else {}
    data.setdefault("scripts", {})
    only = set(ns.only) if ns.only is not None else None
    vendor = ns.vendor.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if only is None or "probe" in only:
            data["probe"] = {way: run_probe(way, vendor, work) for way in WAYS}
        for name, script, args in scripts():
            if only is None or name in only:
                data["scripts"][name] = {way: run_script(way, vendor, script, args, work) for way in WAYS}
                print(name, json.dumps(data["scripts"][name]), file=sys.stderr)
    data["versions"] = versions(vendor)
    order = [n for n, _, _ in scripts()]
    data["scripts"] = {n: data["scripts"][n] for n in order if n in data["scripts"]}
    DATA.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    DOC.write_text(render(data), encoding="utf-8")
    left = bugs(data["probe"])
    if left:
        print("transfer_to_npu serves, torchport does not: " + ", ".join(left), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
