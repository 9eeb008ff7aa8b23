"""`torchport migrate --object-storage / --modelarts` against a real S3 endpoint on 127.0.0.1.

moto's server mode (PyPI) serves the S3 protocol over HTTP; the generated path manager talks to it
through s3fs exactly as it would to AWS, OBS or MinIO. The training script is a fixture in the
style of public trainers (argparse paths, a checkpoint per epoch).
"""

from __future__ import annotations

import ast
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torchport import report_json

boto3 = pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")
torch = pytest.importorskip("torch")

FIXTURE = Path(__file__).parent / "fixtures" / "storage_project"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def s3():
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        # Never look for instance credentials on the network.
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
        "AWS_CONFIG_FILE": "/nonexistent",
    }
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    yield client, env
    server.stop()


def _keys(client, bucket: str, prefix: str = "") -> list[str]:
    out = client.list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for o in out.get("Contents", []))


def _migrate(tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "torchport",
            "migrate",
            str(FIXTURE),
            "-o",
            str(tmp),
            "--target",
            "cpu",
            *extra,
        ],
        capture_output=True,
        text=True,
        check=False,
    )


def _dataset(client, bucket: str) -> None:
    client.create_bucket(Bucket=bucket)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 8, generator=g)
    y = (x[:, 0] > 0).long()
    local = Path(os.environ.get("TMPDIR", "/tmp")) / f"train-{os.getpid()}.pt"
    torch.save({"x": x, "y": y}, local)
    client.upload_file(str(local), bucket, "toy/data/train.pt")
    local.unlink()


def _fill_config(config: Path, inputs: dict[str, str], outputs: dict[str, str]) -> None:
    text = config.read_text()
    tree = ast.parse(text)  # the generated config parses as Python
    assert any(isinstance(n, ast.Assign) for n in tree.body)
    text = text.replace(
        '    "input": {\n',
        '    "input": {\n' + "".join(f"        {k!r}: {v!r},\n" for k, v in inputs.items()),
    )
    text = text.replace(
        '    "output": {\n',
        '    "output": {\n' + "".join(f"        {k!r}: {v!r},\n" for k, v in outputs.items()),
    )
    config.write_text(text)


def _run(project: Path, cwd: Path, env: dict[str, str], *args: str, **kw) -> subprocess.Popen[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    full.update(env)
    full["TORCHPORT_AUTOHOOK"] = "0"
    return subprocess.Popen(
        [sys.executable, str(project / "train.py"), *args],
        cwd=cwd,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def test_generated_files_follow_ascend_layout(tmp_path):
    r = _migrate(tmp_path, "--modelarts", "--main", "train.py")
    assert r.returncode == 0, r.stderr
    project = tmp_path / "storage_project_cpu"
    pkg = project / "ascend_modelarts_function"
    assert sorted(p.name for p in pkg.iterdir()) == [
        "__init__.py",
        "modelarts_path_manager.py",
        "path_mapping_config.py",
    ]
    # Ascend's config shape: a dict named PATH_MAPPING_CONFIG with "input" and "output" dicts.
    ns: dict = {}
    exec(compile((pkg / "path_mapping_config.py").read_text(), "cfg", "exec"), ns)
    assert ns["PATH_MAPPING_CONFIG"] == {"input": {}, "output": {}}
    cfg = (pkg / "path_mapping_config.py").read_text()
    # The static analysis found the argparse defaults, each a commented suggestion with its line.
    assert "# './data': 's3://BUCKET/data',  # train.py:" in cfg
    assert "argparse --data-dir" in cfg
    assert "# './checkpoints': 's3://BUCKET/checkpoints',  # train.py:" in cfg
    # One import line, after the module docstring, and the file still parses.
    src = (project / "train.py").read_text()
    tree = ast.parse(src)
    first_import = tree.body[1]
    assert isinstance(first_import, ast.Import)
    assert first_import.names[0].name == "ascend_modelarts_function.modelarts_path_manager"
    # The mp.spawn script is reported as unsupported on the platform, and the insert as a change.
    unsupported = (project / "torchport-report" / "unsupported_api.csv").read_text()
    # Its line is the result's (the file the user runs on the platform): TP403 named the process count
    # on the line before the call (`world_size = 2  # no device here: ...`), so the call is on line 11.
    assert (project / "spawn_train.py").read_text().splitlines()[10].lstrip().startswith("mp.spawn(")
    assert "spawn_train.py,11,11,torch.multiprocessing.spawn," in unsupported
    changes = (project / "torchport-report" / "change_list.csv").read_text()
    assert f"train.py,{first_import.lineno},{first_import.lineno},INSERT," in changes
    assert "spawn_train.py:11: warning" in r.stdout
    # report.json gets a storage section, added without rewriting the core's tables.
    rep = report_json.load(project / "torchport-report")
    assert rep["storage"]["platform"] == "modelarts" and rep["storage"]["entry"] == "train.py"
    assert rep["storage"]["spawn"] == [{"file": "spawn_train.py", "line": 11}]
    assert len(rep["findings"]) == sum(f["findings"] for f in rep["files"]) > 0
    raw = (project / "torchport-report" / "report.json").read_text()
    assert raw.startswith('{\n  "storage": {') and '\n  "findings": [\n[' in raw
    # A second run changes nothing in the entry script and keeps the user's config.
    (pkg / "path_mapping_config.py").write_text(
        "PATH_MAPPING_CONFIG = {'input': {}, 'output': {'x': 's3://b/x'}}\n"
    )
    r2 = _migrate(tmp_path, "--modelarts", "--main", "train.py", "--force")
    assert r2.returncode == 0, r2.stderr
    assert "'x': 's3://b/x'" in (pkg / "path_mapping_config.py").read_text()


def test_entry_must_be_named_when_ambiguous(tmp_path):
    r = _migrate(tmp_path, "--object-storage")
    assert r.returncode == 2
    err = r.stderr.strip().splitlines()[-1]
    assert "cannot tell which script is the entry point" in err
    assert "spawn_train.py" in err and "train.py" in err and "--main" in err
    assert "Traceback" not in r.stderr


def test_trains_from_bucket_and_uploads_checkpoints(tmp_path, s3):
    client, env = s3
    _dataset(client, "data-bkt")
    client.create_bucket(Bucket="out-bkt")
    assert _migrate(tmp_path, "--object-storage", "--main", "train.py").returncode == 0
    project = tmp_path / "storage_project_cpu"
    _fill_config(
        project / "torchport_storage" / "path_mapping_config.py",
        {"./data": "s3://data-bkt/toy/data"},
        {"./checkpoints": "s3://out-bkt/run1/checkpoints"},
    )
    work = tmp_path / "work"
    work.mkdir()
    p = _run(project, work, env)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert "epoch 1 loss" in out
    assert (work / "data" / "train.pt").is_file()  # the dataset existed only in the bucket
    assert _keys(client, "out-bkt") == [
        "run1/checkpoints/ckpt_0.pt",
        "run1/checkpoints/ckpt_1.pt",
        "run1/checkpoints/train_log.txt",
    ]
    assert "1 file(s) downloaded, 0 unchanged" in err
    # The uploaded checkpoint is the one the script wrote.
    body = client.get_object(Bucket="out-bkt", Key="run1/checkpoints/ckpt_1.pt")["Body"].read()
    assert body == (work / "checkpoints" / "ckpt_1.pt").read_bytes()
    # A re-run downloads nothing: size and ETag are unchanged.
    p = _run(project, work, env)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert "0 file(s) downloaded, 1 unchanged" in err
    # No partial files are left behind.
    assert not [f for f in work.rglob("*") if ".part-" in f.name]


def test_sigterm_after_first_checkpoint_still_uploads(tmp_path, s3):
    client, env = s3
    _dataset(client, "sig-data")
    client.create_bucket(Bucket="sig-out")
    assert _migrate(tmp_path, "--object-storage", "--main", "train.py").returncode == 0
    project = tmp_path / "storage_project_cpu"
    _fill_config(
        project / "torchport_storage" / "path_mapping_config.py",
        {"./data": "s3://sig-data/toy/data"},
        {"./checkpoints": "s3://sig-out/ckpt"},
    )
    work = tmp_path / "work"
    work.mkdir()
    p = _run(project, work, env, "--linger", "60")
    deadline = time.monotonic() + 240
    assert p.stdout is not None
    for line in p.stdout:
        if "checkpoint written" in line:
            break
        assert time.monotonic() < deadline
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == -signal.SIGTERM
    assert "SIGTERM: uploading outputs before exit" in err
    # The checkpoint, and the log written after it (never passed to torch.save), are in the bucket.
    assert _keys(client, "sig-out") == ["ckpt/ckpt_0.pt", "ckpt/train_log.txt"]


@pytest.mark.parametrize(
    "case, expect",
    [
        ("wrong-endpoint", "cannot reach the store"),
        ("no-credentials", "no credentials"),
        ("missing-object", "no such object or prefix"),
    ],
)
def test_failures_are_one_line_before_training(tmp_path, s3, case, expect):
    client, env = s3
    bucket = f"fail-{case}"
    _dataset(client, bucket)
    assert _migrate(tmp_path, "--object-storage", "--main", "train.py").returncode == 0
    project = tmp_path / "storage_project_cpu"
    remote = f"s3://{bucket}/toy/data" if case != "missing-object" else f"s3://{bucket}/nope"
    _fill_config(project / "torchport_storage" / "path_mapping_config.py", {"./data": remote}, {})
    env = dict(env)
    if case == "wrong-endpoint":
        env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{_free_port()}"
        env["AWS_MAX_ATTEMPTS"] = "1"
    if case == "no-credentials":
        del env["AWS_ACCESS_KEY_ID"]
        del env["AWS_SECRET_ACCESS_KEY"]
    work = tmp_path / "work"
    work.mkdir()
    p = _run(project, work, env)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 2
    lines = [ln for ln in err.strip().splitlines() if ln]
    assert len(lines) == 1, err
    assert lines[0].startswith("torchport storage: error: input ")
    assert expect in lines[0]
    assert "epoch" not in out  # nothing trained


def test_only_local_rank_zero_downloads(tmp_path, s3):
    client, env = s3
    _dataset(client, "ranks-data")
    client.create_bucket(Bucket="ranks-out")
    assert _migrate(tmp_path, "--object-storage", "--main", "train.py").returncode == 0
    project = tmp_path / "storage_project_cpu"
    _fill_config(
        project / "torchport_storage" / "path_mapping_config.py",
        {"./data": "s3://ranks-data/toy/data"},
        {"./checkpoints": "s3://ranks-out/{rank}/ckpt"},
    )
    work = tmp_path / "work"
    work.mkdir()
    common = dict(env, TORCHELASTIC_RUN_ID=f"t{os.getpid()}", WORLD_SIZE="2")
    # Rank 1 starts first and must wait for rank 0's download instead of fetching itself.
    r1 = _run(project, work, dict(common, RANK="1", LOCAL_RANK="1"), "--epochs", "1")
    time.sleep(1.0)
    r0 = _run(project, work, dict(common, RANK="0", LOCAL_RANK="0"), "--epochs", "1")
    _, err0 = r0.communicate(timeout=300)
    _, err1 = r1.communicate(timeout=300)
    assert r0.returncode == 0 and r1.returncode == 0, (err0, err1)
    assert "downloaded" in err0 and "downloaded" not in err1
    # "{rank}" in the output path: every rank uploads its own copy.
    assert _keys(client, "ranks-out") == [
        "0/ckpt/ckpt_0.pt",
        "0/ckpt/train_log.txt",
        "1/ckpt/ckpt_0.pt",
        "1/ckpt/train_log.txt",
    ]


def test_path_manager_is_self_contained():
    """The copied module imports nothing from torchport: the platform may not have it."""
    src = (Path(__file__).parents[2] / "python" / "torchport" / "cloud" / "path_manager.py").read_text()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.ImportFrom) and node.module:
            assert not node.module.startswith("torchport"), node.module
        if isinstance(node, ast.Import):
            assert not any(a.name.startswith("torchport") for a in node.names)
    assert shutil.which(sys.executable)


def test_download_in_one_call_falls_back_file_by_file(tmp_path, s3, monkeypatch):
    """A prefix comes down in one fsspec call; if that call fails part-way, every file is fetched again
    one by one (with retries), and no temporary file is left behind."""
    from torchport.cloud import path_manager as pm

    client, env = s3
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("TORCHPORT_STORAGE_QUIET", "1")
    client.create_bucket(Bucket="bulk-data")
    blobs = {f"set/part{i}/f{i}.bin": os.urandom(1000 + 97 * i) for i in range(6)}
    for key, data in blobs.items():
        client.put_object(Bucket="bulk-data", Key=key, Body=data)

    calls: list[int] = []
    real_get = pm.Remote.get

    def counted_get(self, remote_path, local):
        calls.append(1)
        return real_get(self, remote_path, local)

    monkeypatch.setattr(pm.Remote, "get", counted_get)

    # 1. The one-call path: every file arrives, recorded, with no per-file call.
    dest = tmp_path / "one_call"
    assert pm.download(str(dest), "s3://bulk-data/set") == (6, 0)
    assert not calls
    for key, data in blobs.items():
        assert (dest / key.removeprefix("set/")).read_bytes() == data
    assert pm.download(str(dest), "s3://bulk-data/set") == (0, 6)  # unchanged: nothing fetched

    # 2. The one call fails after writing some temporary files: file by file instead.
    remote = pm.remote_for("s3://bulk-data/set")
    real_fs_get = remote.fs.get  # fsspec sets its sync methods on the instance

    def failing_get(rpaths, lpaths, **kwargs):
        if isinstance(rpaths, list):
            real_fs_get(rpaths[:2], lpaths[:2], **kwargs)
            raise OSError("connection reset by peer")
        return real_fs_get(rpaths, lpaths, **kwargs)

    monkeypatch.setattr(remote.fs, "get", failing_get)
    dest2 = tmp_path / "fallback"
    assert pm.download(str(dest2), "s3://bulk-data/set") == (6, 0)
    assert len(calls) == 6
    for key, data in blobs.items():
        assert (dest2 / key.removeprefix("set/")).read_bytes() == data
    assert not [p for p in dest2.rglob("*") if ".part-" in p.name]
