"""[tool.torchport] in pyproject.toml and torchport.toml: found from the INPUT upwards, turned
into core flags, overridden by the command line; unknown keys and bad values are errors with
the file and line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from torchport import report_json
from torchport.config import ConfigError, apply, find, load

ROOT = Path(__file__).resolve().parents[2]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def torchport(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchport", *args], capture_output=True, text=True, check=False, cwd=cwd
    )


def test_pyproject_table_becomes_flags_and_the_command_line_wins(tmp_path):
    write(
        tmp_path / "pyproject.toml",
        '[project]\nname = "x"\n\n[tool.torchport]\ntarget = "npu"\ntorch-version = "2.6"\n'
        'rules = ["rules/mine.json"]\nexclude = ["third_party"]\nignore = ["TP5"]\n'
        'unsafe-fixes = true\n\n[tool.torchport.per-file-ignores]\n"tests/**" = ["TP301", "TP900"]\n',
    )
    (tmp_path / "src").mkdir()
    flags = apply([str(tmp_path / "src")])
    assert flags == [
        "--target=npu", "--torch-version=2.6", f"--rules={tmp_path / 'rules' / 'mine.json'}",
        "--exclude=third_party", "--ignore=TP5", "--unsafe-fixes",
        "--per-file-ignores=tests/**:TP301,TP900", str(tmp_path / "src"),
    ]  # fmt: skip
    # the command line's --target / -t wins; its lists come after the configuration's
    flags = apply([str(tmp_path), "-t", "mlu", "--exclude", "docs"])
    assert "--target=npu" not in flags and flags[-5:] == [str(tmp_path), "-t", "mlu", "--exclude", "docs"]
    assert flags.index("--exclude=third_party") < flags.index("docs")
    assert "--target=npu" not in apply([str(tmp_path), "--target=mlu"])
    assert "--target=npu" not in apply([str(tmp_path), "-tmlu"])
    assert apply([str(tmp_path), "--no-config", "-t", "mlu"]) == [str(tmp_path), "-t", "mlu"]


def test_torchport_toml_comes_before_pyproject_and_a_pyproject_without_the_table_is_passed(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.torchport]\ntarget = "npu"\n')
    write(tmp_path / "pkg" / "pyproject.toml", '[project]\nname = "pkg"\n')
    write(tmp_path / "pkg" / "torchport.toml", 'target = "mps"\n')
    write(tmp_path / "pkg" / "sub" / "pyproject.toml", "[tool.black]\nline-length = 100\n")
    cfg = find(tmp_path / "pkg" / "sub")
    assert (
        cfg is not None
        and cfg.path == tmp_path / "pkg" / "torchport.toml"
        and cfg.values == {"target": "mps"}
    )
    (tmp_path / "pkg" / "torchport.toml").unlink()
    cfg = find(tmp_path / "pkg" / "sub" / "x.py")
    assert cfg is not None and cfg.path == tmp_path / "pyproject.toml"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[project]\nname = "x"\n\n[tool.torchport]\ntarget = "npu"\ntarget-version = "2.6"\n',
            ":6: unknown key 'target-version' in [tool.torchport] (known keys: target, torch-version,",
        ),
        ('[tool.torchport]\n\n\nexclude = "build"\n', ":4: 'exclude' must be a list of strings"),
        ("[tool.torchport]\njobs = 0\n", ":2: 'jobs' must be a positive integer"),
        ('[tool.torchport.per-file-ignores]\n"a/*" = "TP1"\n', ":1: 'per-file-ignores' must be a table"),
        ("[tool.torchport.colour]\nx = 1\n", ":1: unknown key 'colour' in [tool.torchport]"),
        ('[tool.torchport]\ntarget = "npu\n', ":2:"),
    ],
)
def test_errors_name_the_file_and_line(tmp_path, text, message):
    path = write(tmp_path / "pyproject.toml", text)
    with pytest.raises(ConfigError) as e:
        load(path)
    assert str(e.value).startswith(f"{path}{message}"), str(e.value)


def test_unknown_key_in_torchport_toml_is_a_usage_error_of_the_command(tmp_path):
    write(tmp_path / "torchport.toml", 'target = "npu"\n# the fix policy\nunsafe_fixes = true\n')
    write(tmp_path / "a.py", "import torch\n")
    proc = torchport("analyze", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"torchport analyze: error: {tmp_path / 'torchport.toml'}:3: unknown key 'unsafe_fixes' in "
        "torchport.toml (known keys: target, torch-version, jobs, specify-device, rules, exclude, ignore, "
        "per-file-ignores, unsafe-fixes, keep-device-flags)"
    )


def test_configuration_drives_the_core(tmp_path):
    """End to end: target, exclude and per-path ignores from pyproject.toml reach the core."""
    proj = tmp_path / "proj"
    write(proj / "train.py", "import torch\nx = torch.ones(2).cuda()\ntorch.cuda.synchronize()\n")
    write(proj / "tests" / "test_a.py", "import torch\ny = torch.ones(2).cuda()\n")
    write(proj / "third_party" / "lib.py", "import torch\nz = torch.ones(2).cuda()\n")
    write(
        proj / "pyproject.toml",
        '[tool.torchport]\ntarget = "cpu"\nexclude = ["third_party"]\n'
        '[tool.torchport.per-file-ignores]\n"tests/**" = ["TP3"]\n',
    )
    proc = torchport("analyze", str(proj), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    rep = report_json.loads(proc.stdout)
    assert rep["target"] == "cpu"
    files = {f["file"]: f for f in rep["files"]}
    assert files["third_party/lib.py"]["outcome"] == "Skip"
    assert files["third_party/lib.py"]["reason"] == "excluded by 'third_party': copied unchanged"
    assert {f["file"] for f in rep["findings"]} == {"train.py"}
    assert files["tests/test_a.py"]["reason"] == "1 finding(s) ignored by the rule selection"
    # the command line wins over the configuration
    rep = report_json.loads(torchport("analyze", str(proj), "--format", "json", "-t", "mps").stdout)
    assert rep["target"] == "mps"


def test_a_config_file_that_is_not_utf8_is_a_located_usage_error(tmp_path):
    # fuzz/python/config_fuzz.py: this was a UnicodeDecodeError traceback (exit 4)
    (tmp_path / "torchport.toml").write_bytes(b'target = "npu"\n# caf\xe9\n')
    write(tmp_path / "a.py", "import torch\n")
    proc = torchport("analyze", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        f"torchport analyze: error: {tmp_path / 'torchport.toml'}:2:6: not UTF-8 (byte 0xe9); "
        "TOML files are UTF-8"
    )
