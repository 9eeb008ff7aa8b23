"""Unit tests of verify's pieces that need no run: migrate-report parsing, tolerances, the working
copy of a tree, torchrun detection and traceback extraction."""

from __future__ import annotations

import math
from pathlib import Path

from torchport.verify.core import SideRun, stage_tree, wants_torchrun
from torchport.verify.verdict import _scale_hint, _widen, expected_differences, rel_dev, within


def finding(msg: str, code: str = "TP200", line: int = 7) -> dict[str, object]:
    return {"file": "train.py", "start_line": line, "code": code, "message": msg, "operation": "MODIFY"}


def test_dtype_findings_of_the_migrate_report() -> None:
    report = {
        "findings": [
            finding('change torch.cuda.amp.autocast to torch.amp.autocast with device type "npu"'),
            finding('change torch.set_autocast_gpu_dtype() to torch.set_autocast_dtype("npu", ...)'),
            finding("float64 is not supported on npu: x.double() kept as float32", "TP700", 12),
            finding("autocast dtype float16 becomes bfloat16 on cpu", "TP200", 20),
            # TP201 pinned the original's dtype: it names the one it avoided, no difference
            finding("pass dtype=torch.float16: ... would become cpu's default bfloat16", "TP201", 30),
        ]
    }
    got = expected_differences(report)
    assert [(e["where"], e["dtype"]) for e in got] == [
        ("train.py:12", "float64"),
        ("train.py:20", "bfloat16"),
    ]
    rtol, cause = _widen(1e-4, got)
    assert rtol == 5e-2
    assert cause is not None and cause.startswith("train.py:20: autocast dtype float16 becomes bfloat16")
    assert _widen(1e-1, got) == (1e-1, None)  # a wider tolerance given by the user stays
    assert expected_differences(None) == []


def test_tolerance_arithmetic() -> None:
    assert within(1.0, 1.0 + 1e-5, 1e-4, 0.0)
    assert not within(1.0, 1.001, 1e-4, 0.0)
    assert not within(float("nan"), 1.0, 1.0, 1.0)
    assert within(float("nan"), float("nan"), 0.0, 0.0)
    assert rel_dev(2.0, 1.0) == 1.0
    assert rel_dev(float("inf"), 1.0) == math.inf


def test_a_power_of_two_between_losses_names_the_loss_scale() -> None:
    row = {"grad_norm_migrated": 0.5, "grad_norm_original": 0.5}
    hint = _scale_hint(1.5, 1.5 * 65536, row)
    assert hint == (
        " (a factor 2^-16: the loss scale differs, e.g. a GradScaler that is disabled or made for another "
        "device; the unscaled gradients agree)"
    )
    assert _scale_hint(1.5, 1.6, row) == ""


def test_the_working_copy_never_writes_into_the_project(tmp_path: Path) -> None:
    src = tmp_path / "proj"
    (src / "pkg").mkdir(parents=True)
    (src / ".git").mkdir()
    (src / "train.py").write_text("print(1)\n")
    (src / "pkg" / "m.py").write_text("x = 1\n")
    (src / "data.bin").write_bytes(b"\0" * ((16 << 20) + 1))
    dst = stage_tree(src, tmp_path / "copy", single_script=False)
    assert (dst / "train.py").read_text() == "print(1)\n" and not (dst / "train.py").is_symlink()
    assert (dst / "pkg" / "m.py").is_file() and not (dst / "pkg").is_symlink()
    assert (dst / "data.bin").is_symlink()  # big files are read in place
    assert not (dst / ".git").exists()
    (dst / "ckpt.pt").write_text("written by the run")
    assert not (src / "ckpt.pt").exists()
    one = stage_tree(src, tmp_path / "one", single_script=True)
    assert not (one / "train.py").is_symlink() and (one / "pkg").is_symlink()


def test_torchrun_style_scripts(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text('import torch.distributed as dist\ndist.init_process_group("nccl")\n')
    (tmp_path / "b.py").write_text(
        "import torch.multiprocessing as mp\ndist.init_process_group()\nmp.spawn(f)\n"
    )
    (tmp_path / "c.py").write_text("print(1)\n")
    assert wants_torchrun(tmp_path, ["a.py"])
    assert not wants_torchrun(tmp_path, ["b.py"])  # starts its ranks itself
    assert not wants_torchrun(tmp_path, ["c.py"])


def test_the_workers_traceback_comes_first() -> None:
    side = SideRun("original", Path("."), ["t.py"], "run")
    side.stderr = (
        'Traceback (most recent call last):\n  File "t.py", line 3, in <module>\n    f()\n'
        "ValueError: the root cause\n"
        "E1125 agent line\n"
        'Traceback (most recent call last):\n  File "run.py", line 9\nChildFailedError: \n'
    )
    assert side.traceback() == (
        'Traceback (most recent call last):\n  File "t.py", line 3, in <module>\n'
        "    f()\nValueError: the root cause"
    )


def test_the_probe_takes_a_script_module(tmp_path: Path) -> None:
    # A ScriptModule refuses per-module hooks ("not supported on ScriptModules"); the probe must
    # still record it (jit_script.py of the e2e scripts crashed under verify before).
    import torch

    from torchport.probe.recorder import Probe

    torch.manual_seed(0)
    model = torch.jit.script(torch.nn.Linear(2, 2))
    probe = Probe(None, out=tmp_path / "dump")
    with probe:
        model(torch.ones(1, 2)).sum().backward()
    assert probe._seq >= 2  # forward input and output at least


def test_what_is_not_made_deterministic_is_noted(tmp_path: Path) -> None:
    # In a child process: the recorder patches torch globally.
    import json
    import subprocess
    import sys

    code = f"""
import json, torch, torch._prims_common
from torchport.verify.recorder import Recorder
rec = Recorder({{"out": {str(tmp_path / "trace")!r}, "steps": 1, "seed": 0, "level": "module"}})
rec.install()
loader = torch.utils.data.DataLoader(list(range(8)), batch_size=4, num_workers=2, persistent_workers=True)
torch.set_num_threads(4)
torch._prims_common.alert_not_deterministic("my_scatter_op")
print(json.dumps([loader.num_workers, torch.get_num_threads(), rec.notes]))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stderr
    workers, threads, notes = json.loads(p.stdout)
    assert (workers, threads) == (0, 1)
    assert notes[0] == "DataLoader num_workers=2 was set to 0 (one process, the same order)"
    assert notes[1] == "torch.set_num_threads(4) was kept at 1 thread"
    assert "not deterministic: my_scatter_op does not have a deterministic implementation" in notes[2]


def test_a_grad_scaler_loss_is_recorded_with_its_scale_and_shown_unscaled(tmp_path: Path) -> None:
    # In a child process: the recorder patches torch globally. torch.cuda.amp's GradScaler inherits
    # torch.amp's scale(), so both spellings are seen.
    import json
    import subprocess
    import sys

    code = f"""
import json, torch
from torchport.verify.recorder import Recorder
rec = Recorder({{"out": {str(tmp_path / "trace")!r}, "steps": 5, "seed": 0, "level": "module"}})
rec.install()
w = torch.nn.Parameter(torch.tensor([0.5]))
scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
loss = (w * 3.0).sum()
scaler.scale(loss).backward()
(w * 2.0).sum().backward()
print(json.dumps(rec.losses))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stderr
    scaled, plain = json.loads(p.stdout)
    assert scaled == {
        "value": 1536.0,
        "bits": (1536.0).hex(),
        "dtype": "torch.float32",
        "scale": 1024.0,
        "unscaled": 1.5,
    }
    assert plain == {"value": 1.0, "bits": (1.0).hex(), "dtype": "torch.float32"}


def test_the_step_table_shows_unscaled_losses_and_says_so() -> None:
    from torchport.verify.cli import render_text
    from torchport.verify.verdict import step_rows

    def side(loss: float, scale: float) -> list[dict]:
        rec = {"value": loss * scale, "bits": (loss * scale).hex(), "dtype": "torch.float32"}
        rec.update({"scale": scale, "unscaled": loss} if scale != 1.0 else {})
        return [{"step": 0, "losses": [rec], "grad_norm": 1.0, "param_crc": 7}]

    rows = step_rows(side(2.2098, 65536.0), side(2.2098, 65536.0))
    assert rows[0]["loss_migrated"] == [2.2098 * 65536.0]  # the verdict still compares these
    assert rows[0]["loss_unscaled_original"] == [2.2098]
    rep = {
        "verdict": "identical",
        "reason": "r",
        "target": "cpu",
        "steps_requested": 1,
        "seed": 0,
        "level": "module",
        "steps": rows,
    }
    text = render_text(rep)
    (row,) = [ln for ln in text.splitlines() if ln.startswith("   0 ")]
    assert row.split()[1:3] == ["2.2098", "2.2098"], text
    assert (
        "(losses are unscaled: backward() received them multiplied by the GradScaler's scale "
        "(original 65536; migrated 65536); the verdict compares the scaled values)"
    ) in text
    plain = render_text({**rep, "steps": step_rows(side(2.5, 1.0), side(2.5, 1.0))})
    assert "unscaled" not in plain and " 2.5 " in plain
    mixed = render_text({**rep, "steps": step_rows(side(2.5, 1.0), side(2.5, 128.0))})
    assert "(original 128; migrated not scaled)" in mixed
