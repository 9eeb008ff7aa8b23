"""No input takes a run down (docs/cli.md, "One file never takes the run down"), and generated worst
cases stay within a time and memory bound written here.

Deep files sit beside an ordinary CUDA file: the files that cannot be handled are Failure rows of
not_migrated.csv with a located reason, copied unchanged, the exit code is 3, and the ordinary file
is migrated. The other worst cases (huge literals, a 100,000-line function, a million tiny files,
identifiers from every Unicode category) are handled in full. Each bound is for the whole command
on a 2-core CI machine running other tests beside it, with room to spare: a crash, a hang or a
blow-up fails the test. The core's own speed is measured in bench/, not here.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest

from torchport import report_json

REPO = Path(__file__).resolve().parents[2]
SHARED_CRASH = Path(os.environ.get("TORCHPORT_SHARED", REPO.parent / "shared")) / "crashes"
ORDINARY = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
EXE = str(Path(sys.executable).with_name("torchport"))

# Runs a command and prints its wall time and the peak resident memory of its process tree (the
# largest process: the front end, the core or its worker child), as `elapsed maxrss_kib`.
_BOUNDED = """
import resource, subprocess, sys, time
t = time.monotonic()
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stdout.write(p.stdout); sys.stderr.write(p.stderr)
print(f"\\n@@ {time.monotonic() - t:.3f} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
sys.exit(p.returncode)
"""


class Bounded:
    def __init__(self, done: subprocess.CompletedProcess[str]) -> None:
        out, _, tail = done.stdout.rpartition("\n@@ ")
        seconds, kib = tail.split()
        self.returncode = done.returncode
        self.stdout = out
        self.stderr = done.stderr
        self.seconds = float(seconds)
        self.mib = int(kib) / 1024


def torchport(*args: str, seconds: float, mib: float) -> Bounded:
    done = subprocess.run(
        [sys.executable, "-c", _BOUNDED, EXE, *args], capture_output=True, text=True, timeout=seconds * 3
    )
    r = Bounded(done)
    assert r.seconds < seconds, f"took {r.seconds:.1f} s, bound {seconds} s"
    assert r.mib < mib, f"peak {r.mib:.0f} MiB, bound {mib} MiB"
    return r


def not_migrated(report_dir: Path) -> dict[str, str]:
    with open(report_dir / "not_migrated.csv", newline="", encoding="utf-8") as f:
        return {row["File"]: row["Reason"] for row in csv.DictReader(f)}


def csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# name -> (text, the start of the reason's message after "name:line:col: ")
DEEP = {
    "sum_50000.py": ("y = " + " + ".join(["x.cuda()"] * 50000) + "\n", "too deeply nested"),
    "chain_200000.py": ("y = x" + ".cuda()" * 200000 + "\n", "too deeply nested"),
    "unary_100000.py": ("y = " + "-" * 100000 + "x\n", "too deeply nested"),
    "calls_100000.py": ("y = " + "f(" * 100000 + ")" * 100000 + "\n", "too many nested parentheses"),
    "lambdas_20000.py": ("y = " + "lambda: " * 20000 + "x\n", "too deeply nested"),
    "subscripts_100000.py": ("y = x.cuda()" + "[0]" * 100000 + "\n", "too deeply nested"),
    "ternaries_20000.py": ("y = " + "x.cuda() if a else " * 20000 + "b\n", "too deeply nested"),
    "blocks_200.py": (
        "".join("    " * i + "if x:\n" for i in range(200)) + "    " * 200 + "pass\n",
        "too many",
    ),
    # our own form of the parser's use-after-free: a lexical error and `except X, e:`
    "uaf.py": ("try:\n    go()\nexcept KeyError, err:\n    pass\nz = 1 ? 2\n", "invalid"),
}


def test_deep_files_are_failure_rows_and_the_rest_migrates(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "ordinary.py").write_text(ORDINARY)
    for name, (text, _) in DEEP.items():
        (proj / name).write_text(text)
    done = torchport(
        "migrate", str(proj), "-o", str(tmp_path / "out"), "--target", "npu", seconds=60, mib=1024
    )
    assert done.returncode == 3, done.stderr[-2000:]
    result = tmp_path / "out" / "proj_npu"
    rows = not_migrated(result / "torchport-report")
    assert set(rows) == set(DEEP), rows
    for name, (text, message) in DEEP.items():
        # "name:line:col: message (copied unchanged)"
        head, _, rest = rows[name].partition(": ")
        path, line, col = head.split(":")
        assert path == name and int(line) >= 1 and int(col) >= 1, rows[name]
        assert rest.startswith(message), rows[name]
        assert rows[name].endswith("(copied unchanged)"), rows[name]
        assert (result / name).read_text() == text, f"{name} not copied unchanged"
        assert rows[name] in done.stderr
    migrated = "import torch\nimport torch_npu\nmodel = torch.nn.Linear(2, 2).npu()\n"
    assert (result / "ordinary.py").read_text() == migrated
    # An incomplete run is still reported in full, its page included.
    assert f"report page: {result / 'torchport-report' / 'index.html'}" in done.stdout
    assert (result / "torchport-report" / "index.html").is_file()


def test_analyze_without_output_reports_them_too(tmp_path: Path) -> None:
    for name, (text, _) in DEEP.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "ordinary.py").write_text(ORDINARY)
    done = torchport("analyze", str(tmp_path), "--target", "npu", seconds=60, mib=1024)
    assert done.returncode == 3, done.stderr[-2000:]
    for name in DEEP:
        assert f"{name}:" in done.stderr
    assert "ordinary.py:2:" in done.stdout  # its findings are reported


@pytest.mark.skipif(not (SHARED_CRASH / "parser-use-after-free.py").is_file(), reason="no ../shared/crashes")
def test_the_shared_crash_input(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    crash = (SHARED_CRASH / "parser-use-after-free.py").read_bytes()
    (proj / "crash.py").write_bytes(crash)
    (proj / "ordinary.py").write_text(ORDINARY)
    done = torchport(
        "migrate", str(proj), "-o", str(tmp_path / "out"), "--target", "cpu", seconds=60, mib=1024
    )
    assert done.returncode == 3, done.stderr[-2000:]
    result = tmp_path / "out" / "proj_cpu"
    rows = not_migrated(result / "torchport-report")
    assert list(rows) == ["crash.py"]
    assert rows["crash.py"].startswith("crash.py:"), rows
    assert (result / "crash.py").read_bytes() == crash
    assert ".cuda()" not in (result / "ordinary.py").read_text()


def test_huge_literals(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "string.py").write_text(
        "import torch\nS = '" + "cuda " * 4_000_000 + "'\nx = torch.ones(1).cuda()\n"
    )
    (proj / "list.py").write_text("import torch\nL = [" + "1, " * 1_000_000 + "]\nx = torch.ones(1).cuda()\n")
    (proj / "number.py").write_text("N = " + "9" * 4000 + "\nM = 0x" + "f" * 1_000_000 + "\n")
    (proj / "bytes.py").write_text("B = b'" + "\\x00" * 1_000_000 + "'\n")
    (proj / "dict.py").write_text(
        "D = {" + "".join(f"'k{i}': 'cuda:{i % 8}', " for i in range(200_000)) + "}\n"
    )
    done = torchport(
        "migrate", str(proj), "-o", str(tmp_path / "out"), "--target", "npu", seconds=60, mib=2048
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = tmp_path / "out" / "proj_npu"
    assert not_migrated(result / "torchport-report") == {}
    for name in ("string.py", "list.py"):
        out = (result / name).read_text()
        assert out.endswith("x = torch.ones(1).npu()\n") and "import torch_npu" in out, name
    assert (result / "number.py").read_text() == (proj / "number.py").read_text()
    assert (result / "bytes.py").read_text() == (proj / "bytes.py").read_text()
    compile((result / "dict.py").read_text(), "dict.py", "exec")  # whatever changed, it parses


def test_a_100000_line_function(tmp_path: Path) -> None:
    body = "".join(f"    t{i} = torch.zeros({i % 7}).cuda()\n" for i in range(100_000))
    (tmp_path / "big.py").write_text("import torch\n\n\ndef f():\n" + body + "    return t0\n")
    done = torchport(
        "migrate",
        str(tmp_path / "big.py"),
        "-o",
        str(tmp_path / "out"),
        "--target",
        "npu",
        seconds=90,
        mib=2048,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = (tmp_path / "out" / "big_npu" / "big.py").read_text()
    assert out.count(".npu()") == 100_000 and ".cuda()" not in out
    changes = csv_rows(tmp_path / "out" / "big_npu" / "torchport-report" / "change_list.csv")
    assert len(changes) == 100_001  # every .cuda() and the import


def test_a_million_tiny_files(tmp_path: Path) -> None:
    root = tmp_path / "many"
    try:
        _a_million_tiny_files(root, tmp_path / "report")
    finally:  # 4 GB of blocks and a million inodes: not left for pytest's kept temporary folders
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(tmp_path / "report", ignore_errors=True)


def _a_million_tiny_files(root: Path, report: Path) -> None:
    # os.open/os.write rather than Path.write_text: a third of the time (about 40 s instead of
    # 2 min in CI, where this was the slowest test), the same million distinct files. A file in each
    # thousand has CUDA to move, one in a hundred a statement, the rest are empty modules: a file
    # with a byte in it takes a disk block, and on a file system mounted with `discard` (this
    # machine's ext4) removing a million blocks took minutes.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    for i in range(1000):
        d = f"{root}/p{i:03d}"
        os.makedirs(d)
        for j in range(1000):
            fd = os.open(f"{d}/m{j:03d}.py", flags, 0o644)
            try:
                if j == 0:
                    os.write(fd, b"import torch\ny = torch.zeros(1).cuda()\n")
                elif j % 100 == 1:
                    os.write(fd, b"x = 1\n")
            finally:
                os.close(fd)
    done = torchport("analyze", str(root), "--target", "npu", "-o", str(report), seconds=240, mib=4096)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "1000000 files (1000000 Python): 1000000 success, 0 failure, 0 skipped" in done.stdout
    assert not_migrated(report) == {}
    changes = csv_rows(report / "change_list.csv")
    moved = sorted(r["File"] for r in changes if r["Message"] == "change method .cuda to .npu")
    assert moved == [f"p{i:03d}/m000.py" for i in range(1000)]


def _identifier_chars() -> dict[str, list[str]]:
    """Per Unicode category, up to 40 characters that may start (or, for the continue-only categories, follow)
    an identifier, as CPython decides (str.isidentifier, which is PEP 3131 with NFKC)."""
    found: dict[str, list[str]] = {}
    for cp in range(0x80, 0x30000):
        c = chr(cp)
        cat = unicodedata.category(c)
        if len(found.get(cat, [])) >= 40:
            continue
        if c.isidentifier() or ("a" + c).isidentifier():
            found.setdefault(cat, []).append(c)
    return found


def test_names_from_every_unicode_category(tmp_path: Path) -> None:
    chars = _identifier_chars()
    # Every category Python allows in names: letters, letter numbers, marks, digits, connectors (and the
    # Other_ID_Start/Continue symbols).
    assert {"Lu", "Ll", "Lt", "Lm", "Lo", "Nl", "Mn", "Mc", "Nd", "Pc"} <= set(chars)
    lines = ["import torch"]
    names = []
    for cat, cs in sorted(chars.items()):
        for k, c in enumerate(cs):
            name = (c if c.isidentifier() else "a" + c) + f"_{cat}{k}"
            names.append(name)
            lines.append(f"{name} = torch.zeros(1).cuda()")
    lines.append("device = 'cuda'")
    src = "\n".join(lines) + "\n"
    compile(src, "names.py", "exec")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "names.py").write_text(src, encoding="utf-8")
    # Symbols, punctuation and separators are not names: a located syntax error, as CPython's.
    (proj / "symbol.py").write_text("x\u2603 = 1\n", encoding="utf-8")
    done = torchport(
        "migrate", str(proj), "-o", str(tmp_path / "out"), "--target", "npu", seconds=60, mib=1024
    )
    assert done.returncode == 3, done.stderr[-2000:]
    result = tmp_path / "out" / "proj_npu"
    rows = not_migrated(result / "torchport-report")
    assert list(rows) == ["symbol.py"] and rows["symbol.py"].startswith("symbol.py:1:2: "), rows
    out = (result / "names.py").read_text(encoding="utf-8")
    compile(out, "names.py", "exec")
    assert out.count(".npu()") == len(names)
    for name in names:
        assert f"\n{name} = torch.zeros(1).npu()\n" in out, name
    report = report_json.load(result / "torchport-report" / "report.json")
    assert report["summary"]["not_migrated"] == 1


def test_stopping_the_command_stops_its_work(tmp_path: Path) -> None:
    # analyze/migrate work in a child process (docs/cli.md): a `timeout` or a CI runner that stops
    # the command must not leave that child running.
    proj = tmp_path / "big_tree_to_stop"
    proj.mkdir()
    (proj / "big.py").write_text("import torch\n" + "x = torch.zeros(1).cuda()\n" * 1_500_000)
    p = subprocess.Popen([EXE, "analyze", str(proj), "--target", "npu"], stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    assert p.poll() is None, "finished before it could be stopped: make the input larger"
    p.terminate()
    p.wait(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = _processes_naming(str(proj))
        if not left:
            break
        time.sleep(0.2)
    assert not left, f"still running after the command was stopped: {left}"


def _processes_naming(text: str) -> list[int]:
    """The processes whose command line contains `text` (from /proc: no procps needed)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found
