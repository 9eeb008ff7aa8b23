"""The stand-in vendor modules against torchport's catalogue and the vendors' published API lists:

- every API that `torchport migrate --target T` can write into a file (a replacement in data/catalogue that
  is not marked unsupported) exists under `torchport rehearse --target T`;
- the stand-in device module offers nothing that the vendor's published `__all__` (../shared/upstream)
  does not list, or (npu) its newest torch-npu wheel does not have, except the functions torch itself
  requires of a PrivateUse1 device module.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rehearse_testlib import REPO, rehearsal_built, rehearse  # noqa: F401

FIX = Path(__file__).resolve().parent / "fixtures" / "rehearse"
CATALOGUE = REPO / "data" / "catalogue"
UPSTREAM = REPO.parent / "shared" / "upstream"
STANDINS = REPO / "python" / "torchport" / "rehearse" / "standins"
PY_NAME = re.compile(r'^(\.[A-Za-z_]\w*|"[a-z]+"|[A-Za-z_]\w*(\.[A-Za-z_]\w*)+)$')


def _targets() -> dict[str, dict[str, str]]:
    doc = json.loads((REPO / "data" / "targets.json").read_text(encoding="utf-8"))
    return {t["name"]: t for t in doc["targets"]}


def emitted(target: str) -> list[str]:
    """API names migrate writes for `target`: catalogue replacements (with '*' entries expanded)."""
    info = _targets()[target]
    out: set[str] = set()
    for f in sorted(CATALOGUE.glob("*.json")):
        for e in json.loads(f.read_text(encoding="utf-8")).get("entries", []):
            targets = e.get("targets") or {}
            m = targets.get(target) or targets.get("*")
            if not m or not m.get("replacement") or m.get("status") == "unsupported":
                continue
            rep = m["replacement"]
            for k in ("device", "module", "backend", "visible_devices", "amp_device"):
                rep = rep.replace("{" + k + "}", str(info.get(k, "")))
            if PY_NAME.match(rep) and not rep.isupper():
                out.add(rep)
    return sorted(out)


@pytest.mark.parametrize("target", ["npu", "mlu", "musa"])
def test_every_api_migrate_can_write_exists_in_the_stand_in(
    target: str,
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    names = emitted(target)
    assert len(names) > 20  # the catalogue was read
    lst = tmp_path / "names.json"
    lst.write_text(json.dumps(names), encoding="utf-8")
    pkg = {"npu": "torch_npu", "mlu": "torch_mlu", "musa": "torch_musa"}[target]
    script = tmp_path / "check.py"
    script.write_text(f"import {pkg}\n" + (FIX / "resolve_apis.py").read_text(encoding="utf-8"))
    p = rehearse("--target", target, str(script), str(lst), target)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout.splitlines()[-1])
    assert got["checked"] == len(names)
    assert got["missing"] == []


def _vendor_all(target: str) -> frozenset[str]:
    rel = {
        "npu": "ascend-torch_npu/torch_npu.npu.__all__.txt",
        "mlu": "cambricon-torch_mlu/torch_mlu.mlu.__all__.txt",
    }
    src = UPSTREAM / rel[target]
    path = src if src.is_file() else STANDINS / f"{target}_all.txt"
    names = frozenset(
        ln.strip()
        for ln in path.read_text(encoding="utf-8").splitlines()
        if ln.strip() and not ln.startswith("#")
    )
    if target == "npu":  # and what torch_npu.npu has in the vendor's newest wheel (tools/check_vendor_npu.py)
        doc = json.loads((REPO / "data" / "vendor" / "torch_npu_namespace.json").read_text(encoding="utf-8"))
        newest = max(doc["wheels"].values(), key=lambda w: tuple(int(x) for x in w["torch"].split(".")))
        names |= frozenset(newest["names"])
    return names


@pytest.mark.parametrize("target", ["npu", "mlu"])
def test_the_shipped_copy_of_the_vendor_list_is_the_upstream_list(target: str) -> None:
    rel = {
        "npu": "ascend-torch_npu/torch_npu.npu.__all__.txt",
        "mlu": "cambricon-torch_mlu/torch_mlu.mlu.__all__.txt",
    }
    src = UPSTREAM / rel[target]
    if not src.is_file():
        pytest.skip(f"{src} is not beside this checkout")
    shipped = STANDINS / f"{target}_all.txt"
    lines = [ln for ln in shipped.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    assert lines == src.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("target", ["npu", "mlu"])
def test_the_stand_in_offers_nothing_the_vendor_does_not_list(
    target: str,
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    from torchport.rehearse.devmod import REQUIRED_BY_TORCH

    lst = tmp_path / "names.json"
    lst.write_text("[]", encoding="utf-8")
    p = rehearse("--target", target, str(FIX / "resolve_apis.py"), str(lst), target)
    assert p.returncode == 0, p.stderr
    public = set(json.loads(p.stdout.splitlines()[-1])["device_module_public"])
    extra = public - _vendor_all(target)
    # only what torch requires of a PrivateUse1 device module (reference §2.1) may go beyond the list
    assert extra <= REQUIRED_BY_TORCH, sorted(extra - REQUIRED_BY_TORCH)
    assert len(public & _vendor_all(target)) > 40


CAPABILITY = """
import warnings
import torch
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    cap = torch.{target}.get_device_capability()
print("CAP", cap, any("{env}" in str(w.message) for w in caught) if "{env}" else None)
"""


@pytest.mark.parametrize(
    "target, env, value, want",
    [
        ("npu", "", "", "CAP None True"),  # torch_npu 2.13.0: None, with a warning naming the variable
        ("npu", "TORCH_NPU_DEVICE_CAPABILITY", "8.0", "CAP (8, 0) False"),
        ("npu", "TORCH_NPU_DEVICE_CAPABILITY", "8", "CAP None True"),  # not major.minor: None, warned
        ("mlu", "", "", "CAP (0, 0) None"),  # no variable named in data/targets.json: (0, 0)
    ],
)
def test_the_stand_in_answers_get_device_capability_as_the_vendor_does(
    target: str,
    env: str,
    value: str,
    want: str,
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    """data/targets.json `device_capability_env` (npu: TORCH_NPU_DEVICE_CAPABILITY, as the catalogue's npu
    `returns: None` says): the stand-in's torch_npu.npu agrees with the vendor's
    (test_rehearse_vendor_npu.py)."""
    script = tmp_path / "cap.py"
    script.write_text(
        CAPABILITY.format(target=target, env="TORCH_NPU_DEVICE_CAPABILITY" if target == "npu" else "")
    )
    extra = {"TORCH_NPU_DEVICE_CAPABILITY": value}  # "" removes it
    which = ["--vendor-torch-npu", "off"] if target == "npu" else []  # the stand-in, not the vendor's
    p = rehearse("--target", target, *which, str(script), extra_env=extra)
    assert p.returncode == 0, p.stderr[-3000:]
    assert want in p.stdout.splitlines(), p.stdout


def test_torchport_run_answers_zero_where_the_vendors_capability_is_none(
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    """`torch.cuda.get_device_capability()[0] >= 8` under `torchport run --target npu` takes its fallback
    path, as migrate's output does (the catalogue's if_none), and the log says why (mismatch)."""
    script = tmp_path / "cap.py"
    script.write_text("import torch\nprint('CAP', torch.cuda.get_device_capability())\n")
    log = tmp_path / "run.log"
    run = ["-m", "torchport", "run", "--target", "npu", "--quiet", "--log", str(log), str(script)]
    p = rehearse(
        "--target", "npu", "--vendor-torch-npu", "off", *run, extra_env={"TORCH_NPU_DEVICE_CAPABILITY": ""}
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "CAP (0, 0)" in p.stdout
    line = next(ln for ln in log.read_text().splitlines() if "get_device_capability" in ln)
    assert "[mismatch]" in line and "TORCH_NPU_DEVICE_CAPABILITY is set" in line, line
    p = rehearse(
        "--target", "npu", "--vendor-torch-npu", "off", *run, extra_env={"TORCH_NPU_DEVICE_CAPABILITY": "9.0"}
    )  # fmt: skip
    assert "CAP (9, 0)" in p.stdout, p.stderr[-3000:]
