#!/usr/bin/env python3
"""The surface of torchport's replacement of torch_npu's compiled core (issue 31 §2): which
`torch_npu._C` names the vendor's Python uses, and which of them the rehearsal serves or refuses.

Reads the Python source of the pinned torch-npu wheel of the newest torch line
(data/vendor/torch_npu_wheels.json, downloaded and verified by tools/check_vendor_npu.py's code) as text,
collects every `torch_npu._C...` name it uses (`torch_npu._C.X.Y`, `from torch_npu._C[.child] import X`,
and `_C.X` in files that bind `_C` to torch_npu._C), and writes data/vendor/torch_npu_core.json: each name
with "served" (done on the rehearsal device by python/torchport/rehearse/npu_core.py, with the first line
of its docstring) or "refused" (raises "not available in rehearsal: <name>" when used).

With --install DIR it also installs the wheel for the rehearsal (pip install --no-deps --no-index
--target DIR; never into the venv): `torchport rehearse --vendor-torch-npu DIR` runs it.

Usage: tools/gen_vendor_npu_core.py [--wheels DIR] [--offline] [--check] [--install DIR]
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_vendor_npu as cvn  # noqa: E402

ROOT = cvn.ROOT
sys.path.insert(0, str(ROOT / "python"))
TABLE = ROOT / "data/vendor/torch_npu_core.json"
IDENT = re.compile(r"^[A-Za-z_]\w*$")


def core_names(sources: dict[str, str]) -> set[str]:
    out: set[str] = set()

    def add(parts: list[str]) -> None:
        if not parts or not all(IDENT.match(p) for p in parts) or parts[0] == "__dict__":
            return
        for i in range(1, len(parts) + 1):
            out.add("torch_npu._C." + ".".join(parts[:i]))

    for text in sources.values():
        for m in re.finditer(r"\btorch_npu\._C((?:\.\w+)+)", text):
            add(m.group(1).strip(".").split("."))
        for m in re.finditer(r"from\s+torch_npu\._C((?:\.\w+)*)\s+import\s+(?:\(([^)]*)\)|([^\n#]*))", text):
            child = m.group(1).strip(".").split(".") if m.group(1) else []
            body = re.sub(r"#[^\n]*", "", m.group(2) or m.group(3) or "")
            for n in body.replace("\n", " ").replace("\\", " ").split(","):
                n = n.strip().split(" as ")[0].strip()
                if n:
                    add([*child, n])
        if re.search(r"from\s+torch_npu\s+import\s+_C\b|import\s+torch_npu\._C\s+as\s+_C\b", text):
            for m in re.finditer(r"(?<![\w.])_C((?:\.\w+)+)", text):
                add(m.group(1).strip(".").split("."))
    return out


def table(names: set[str], pin: dict[str, str]) -> dict[str, object]:
    from torchport.rehearse import npu_core

    served = npu_core.served()
    rows: dict[str, dict[str, str]] = {}
    for n in sorted(names):
        if n in served:
            obj = served[n]
            doc = (getattr(obj, "__doc__", None) or "") if not isinstance(obj, str) else ""
            last = n.rsplit(".", 1)[1]
            if last in npu_core.INIT_FUNCTIONS:
                doc = f"Creates the child module torch_npu._C.{npu_core.INIT_FUNCTIONS[last]}"
            elif isinstance(obj, str) and obj in npu_core.INIT_FUNCTIONS.values():
                doc = "A child module, created by its init function (module_loader)"
            elif isinstance(obj, str):
                doc = "A child module, created with torch_npu._C itself"
            rows[n] = {"status": "served", "does": " ".join(doc.split()).split(". ")[0][:160]}
        else:
            rows[n] = {"status": "refused"}
    extra = sorted(set(served) - names)
    return {
        "source": f"torch-npu {pin['version']} wheel ({pin['filename']}, sha256 {pin['sha256']}): the "
        "torch_npu._C names its Python uses; status from python/torchport/rehearse/npu_core.py "
        "(tools/gen_vendor_npu_core.py)",
        "served": sum(1 for r in rows.values() if r["status"] == "served"),
        "refused": sum(1 for r in rows.values() if r["status"] == "refused"),
        "served_beyond_the_wheel": extra,
        "names": rows,
    }


def render(data: dict[str, object]) -> str:
    return json.dumps(data, indent=1, sort_keys=False) + "\n"


def install(path: Path, target: Path, version: str) -> None:
    """The wheel, installed for the rehearsal only (never into the venv), replacing another version."""
    from torchport.rehearse.vendor_npu import installed_version

    if installed_version(target) == version:
        return
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--target", str(target), str(path)],
        check=True,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wheels", type=Path, default=ROOT / "build/torch_npu_wheels")
    ap.add_argument("--offline", action="store_true")
    ap.add_argument("--check", action="store_true", help="fail when data/vendor/torch_npu_core.json is stale")
    ap.add_argument(
        "--install", type=Path, metavar="DIR", help="also install the wheel into DIR for rehearse"
    )
    args = ap.parse_args(argv)
    pin = cvn.pins()[-1]
    path = cvn.fetch(pin, args.wheels, args.offline)
    wheel = cvn.Wheel.from_file(path, pin["version"])
    text = render(table(core_names(wheel.sources), pin))
    if args.install:
        install(path, args.install, pin["version"])
    if args.check:
        old = TABLE.read_text(encoding="utf-8") if TABLE.is_file() else ""
        if old != text:
            sys.stdout.writelines(
                difflib.unified_diff(old.splitlines(True), text.splitlines(True), str(TABLE), "new")
            )
            print(f"{TABLE} is stale: run tools/gen_vendor_npu_core.py", file=sys.stderr)
            return 1
        return 0
    TABLE.write_text(text, encoding="utf-8")
    data = json.loads(text)
    print(f"{TABLE}: {data['served']} served, {data['refused']} refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
