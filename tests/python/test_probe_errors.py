"""Bad input to `torchport compare` / `torchport probe`: a clear one-line error, exit code 2, no traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import torch.nn as nn

from probe_testlib import mlp, train
from torchport.probe.cli import compare_main, probe_main


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    base = tmp_path_factory.mktemp("dumps")
    a = train(base / "a", mlp())
    other = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 8))
    b = train(base / "other", other)
    return a, b


def _run_compare(capsys, *argv):
    code = compare_main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_missing_directory(capsys, tmp_path, dumps):
    code, out, err = _run_compare(capsys, str(dumps[0]), str(tmp_path / "nope"))
    assert code == 2
    assert err.strip() == f"torchport compare: error: {tmp_path / 'nope'}: no such directory"


def test_not_a_dump(capsys, tmp_path, dumps):
    (tmp_path / "x").mkdir()
    code, _, err = _run_compare(capsys, str(tmp_path / "x"), str(dumps[0]))
    assert code == 2
    assert f"{tmp_path / 'x' / 'manifest.json'}: missing" in err


def test_dumps_from_different_models(capsys, dumps):
    code, out, err = _run_compare(capsys, str(dumps[0]), str(dumps[1]))
    assert code == 2
    assert "dumps come from different models" in err
    # The reason names a parameter that differs: layer 0 is Linear(16, 32) vs Linear(16, 8).
    assert "0.weight" in err and "[32, 16]" in err and "[8, 16]" in err
    assert out == ""


def test_truncated_records(capsys, tmp_path, dumps):
    t = tmp_path / "t"
    shutil.copytree(dumps[0], t)
    data = (t / "records.jsonl").read_bytes()
    (t / "records.jsonl").write_bytes(data[: len(data) // 2])
    code, _, err = _run_compare(capsys, str(t), str(dumps[0]))
    assert code == 2
    assert "records.jsonl" in err and "truncated" in err


def test_truncated_line_is_located(tmp_path, dumps):
    from torchport.probe.dump import DumpError, open_dump

    t = tmp_path / "t"
    shutil.copytree(dumps[0], t)
    lines = (t / "records.jsonl").read_bytes().splitlines(keepends=True)
    cut = b"".join(lines[:5]) + lines[5][:10]
    (t / "records.jsonl").write_bytes(cut)
    manifest = json.loads((t / "manifest.json").read_text())
    manifest["records_bytes"] = len(cut)  # even with a manifest that agrees on the size
    (t / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DumpError, match=r"records\.jsonl:6: truncated record"):
        list(open_dump(t).records())


def test_missing_tensor_file(capsys, tmp_path):
    a = train(tmp_path / "a", mlp(), steps=1, full_tensors=True)
    bad = mlp()
    bad[0].bias.data += 1  # make every row differ so that tensors are read
    b = train(tmp_path / "b", bad, steps=1, full_tensors=True)
    victim = sorted((b / "tensors").iterdir())[3]
    victim.unlink()
    code, _, err = _run_compare(capsys, str(a), str(b))
    assert code == 2
    assert str(victim) in err and "missing tensor file" in err


def test_level_mismatch(capsys, tmp_path, dumps):
    op = train(tmp_path / "op", mlp(), steps=1, level="op")
    code, _, err = _run_compare(capsys, str(op), str(dumps[0]))
    assert code == 2 and "op level" in err and "module level" in err


def test_probe_missing_script(capsys, tmp_path):
    code = probe_main(["--out", str(tmp_path / "d"), "--", str(tmp_path / "nope.py")])
    _, err = capsys.readouterr()
    assert code == 2 and "nope.py: no such script" in err
    assert not (tmp_path / "d").exists()


def test_probe_refuses_to_overwrite_a_non_dump(capsys, tmp_path):
    keep = tmp_path / "precious"
    keep.mkdir()
    (keep / "notes.txt").write_text("mine")
    script = tmp_path / "s.py"
    script.write_text("print('hi')\n")
    code = probe_main(["--out", str(keep), "--", str(script)])
    _, err = capsys.readouterr()
    assert code == 2 and "is not a torchport dump" in err
    assert (keep / "notes.txt").read_text() == "mine"


def test_cli_exit_code_without_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "torchport", "compare", str(tmp_path / "a"), str(tmp_path / "b")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("torchport compare: error: ")


def _edit_record(src, dst, index, edit):
    """Copy dump `src` to `dst` with record `index` (0-based) changed by `edit`; the manifest's
    byte count is updated, so only the record itself is wrong."""
    shutil.copytree(src, dst)
    lines = (dst / "records.jsonl").read_text().splitlines()
    rec = json.loads(lines[index])
    edit(rec)
    lines[index] = json.dumps(rec)
    data = ("\n".join(lines) + "\n").encode()
    (dst / "records.jsonl").write_bytes(data)
    manifest = json.loads((dst / "manifest.json").read_text())
    manifest["records_bytes"] = len(data)
    (dst / "manifest.json").write_text(json.dumps(manifest))
    return dst


def _set(key, value):
    def edit(rec):
        rec[key] = value

    return edit


@pytest.mark.parametrize(
    "edit, field, expected",
    [
        (lambda rec: rec.pop("call"), "call", "is missing"),
        (_set("max", "abc"), "max", 'is "abc", expected a number or "nan"/"inf"/"-inf"'),
        (_set("max", [1]), "max", "is [1], expected a number"),
        (_set("call", "0"), "call", 'is "0", expected a non-negative integer'),
        (_set("slot", None), "slot", "is null, expected a non-negative integer"),
        (_set("dir", "sideways"), "dir", 'is "sideways", expected "forward" or "backward"'),
        (_set("shape", "4x4"), "shape", 'is "4x4", expected a list of sizes'),
        (_set("nan", 1.5), "nan", "is 1.5, expected a count"),
        (_set("tensor", "../../x.npy"), "tensor", 'is "../../x.npy", expected null or "tensors/NAME.npy"'),
        (_set("numel", 7), "numel", "is 7, but the shape"),
    ],
)
def test_malformed_record_is_a_clear_error(tmp_path, dumps, edit, field, expected):
    """Through the real command: exit 2, one line naming the file, the record and the field."""
    bad = _edit_record(dumps[0], tmp_path / "bad", 2, edit)
    for argv in ([str(bad), str(dumps[0])], [str(dumps[0]), str(bad)]):
        proc = subprocess.run(
            [sys.executable, "-m", "torchport", "compare", *argv], capture_output=True, text=True
        )
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and proc.stdout == ""
        assert proc.stderr.count("\n") == 1
        assert proc.stderr.startswith(f"torchport compare: error: {bad / 'records.jsonl'}:3: bad record 3: ")
        assert f'field "{field}" {expected}' in proc.stderr


def test_malformed_manifest_model_is_a_clear_error(capsys, tmp_path, dumps):
    bad = tmp_path / "bad"
    shutil.copytree(dumps[0], bad)
    manifest = json.loads((bad / "manifest.json").read_text())
    manifest["model"]["parameters"] = [["0.weight"]]
    (bad / "manifest.json").write_text(json.dumps(manifest))
    code, _, err = _run_compare(capsys, str(bad), str(dumps[0]))
    assert code == 2
    assert f'{bad / "manifest.json"}: field "model.parameters" is not a list of [name, shape]' in err


@pytest.mark.parametrize("name", ["", ".", ".."])
def test_a_records_file_that_names_a_folder_is_refused(capsys, tmp_path, dumps, name):
    # fuzz/python/probe_dump_fuzz.py: "records_file": "" opened the dump folder itself (a traceback)
    t = tmp_path / "t"
    shutil.copytree(dumps[0], t)
    manifest = json.loads((t / "manifest.json").read_text())
    manifest["records_file"] = name
    (t / "manifest.json").write_text(json.dumps(manifest))
    code, _, err = _run_compare(capsys, str(t), str(dumps[0]))
    assert code == 2
    assert err.strip() == (
        f'torchport compare: error: {t / "manifest.json"}: field "records_file" is not a file name'
    )
