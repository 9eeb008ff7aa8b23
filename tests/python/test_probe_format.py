"""The dump format: statistics, hash, tensors and budget, atomic replacement, script mode, reports."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import torch.nn as nn

import torchport
from probe_testlib import mlp, train
from torchport.probe.cli import compare_main, probe_main
from torchport.probe.compare import compare_dumps, tensor_metrics
from torchport.probe.dump import open_dump


class Fixed(nn.Module):
    def forward(self, x):
        return x * 2


def _records(path):
    return [json.loads(line) for line in (path / "records.jsonl").read_text().splitlines()]


def test_statistics_of_a_known_tensor(tmp_path):
    x = torch.tensor([[1.0, -2.0, 3.0], [0.0, 4.0, -6.0]])
    with torchport.probe(Fixed(), out=tmp_path / "d"):
        Fixed()(x)  # another instance: not probed
    with torchport.probe(m := Fixed(), out=tmp_path / "d"):
        m(x)
    recs = _records(tmp_path / "d")
    assert [(r["io"], r["dir"]) for r in recs] == [("in", "forward"), ("out", "forward")]
    out = recs[1]
    # 2x: [[2,-4,6],[0,8,-12]] -> min -12, max 8, mean 0/6 = 0, L2 sqrt(4+16+36+64+144) = sqrt(264)
    assert out["min"] == -12 and out["max"] == 8 and out["mean"] == 0
    assert abs(out["norm"] - 264**0.5) < 1e-9
    assert out["shape"] == [2, 3] and out["dtype"] == "float32" and out["device"] == "cpu"
    assert out["nan"] == 0 and out["inf"] == 0


def test_nan_and_inf_counts(tmp_path):
    x = torch.tensor([1.0, float("nan"), float("inf"), float("-inf"), float("nan")])
    with torchport.probe(m := Fixed(), out=tmp_path / "d"):
        m(x)
    rec = _records(tmp_path / "d")[1]
    assert rec["nan"] == 2 and rec["inf"] == 2
    assert rec["max"] == "nan"  # JSON has no NaN: written as a string


def test_hash_is_stable_and_content_sensitive(tmp_path):
    train(tmp_path / "a", mlp(), steps=1)
    train(tmp_path / "b", mlp(), steps=1)
    ha = [r["hash"] for r in _records(tmp_path / "a")]
    hb = [r["hash"] for r in _records(tmp_path / "b")]
    assert ha == hb and all(h.startswith("crc32:") for h in ha)
    with torchport.probe(m := Fixed(), out=tmp_path / "c"):
        m(torch.zeros(3))
        m(torch.zeros(4))
        m(torch.tensor([0.0, 0.0, 1e-30]))
    hs = [r["hash"] for r in _records(tmp_path / "c") if r["io"] == "out"]
    assert len(set(hs)) == 3  # shape and a single tiny element both change the hash


def test_full_tensors_round_trip_and_budget(tmp_path):
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    with torchport.probe(m := Fixed(), out=tmp_path / "d", full_tensors=True):
        m(x)
        m(x.bfloat16())
    recs = _records(tmp_path / "d")
    assert np.array_equal(np.load(tmp_path / "d" / recs[1]["tensor"]), (x * 2).numpy())
    assert recs[3]["stored_as"] == "bfloat16-bits" and recs[3]["dtype"] == "bfloat16"
    # a 48-byte budget holds exactly one 3x4 float32 tensor
    with pytest.warns(UserWarning, match=r"1 of 2 tensors \(0\.0 MiB\) were not saved: the tensor budget"):
        with torchport.probe(m, out=tmp_path / "e", full_tensors=True, max_tensor_bytes=48):
            m(x)
    recs = _records(tmp_path / "e")
    assert recs[0]["tensor"] and recs[1].get("tensor") is None and recs[1]["max"] == 22
    man = json.loads((tmp_path / "e" / "manifest.json").read_text())
    assert man["tensors"] == {"saved": 1, "bytes": 48, "dropped": 1, "dropped_bytes": 48}


def test_dropped_tensors_are_reported_by_probe_and_compare(tmp_path, capsys):
    """Past --max-tensor-bytes, tensors are not saved: both summaries say how many, and compare
    says how many differing rows fell back to statistics."""
    script = tmp_path / "s.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys, torch
            torch.manual_seed(0)
            m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))
            with torch.no_grad():
                m[1].bias += float(sys.argv[1])
            m(torch.ones(8, 4))
            """
        )
    )
    # 8x4 float32 = 128 bytes per tensor; 6 records (root in/out, two layers in/out), 4 fit.
    common = ["--full-tensors", "--max-tensor-bytes", "512"]
    assert probe_main(["--out", str(tmp_path / "a"), *common, "--", str(script), "0"]) == 0
    err = capsys.readouterr().err
    assert "torchport probe: warning: 2 of 6 tensors (0.0 MiB) were not saved" in err
    assert "budget of 0.0 MiB (max_tensor_bytes / --max-tensor-bytes) was spent" in err
    assert probe_main(["--out", str(tmp_path / "b"), "--", str(script), "0.5"]) == 0
    assert "not saved" not in capsys.readouterr().err
    assert probe_main(["--out", str(tmp_path / "c"), "--full-tensors", "--", str(script), "0.5"]) == 0
    capsys.readouterr()
    # The last two records (layer 1's output, the root's output) differ and were not saved in A.
    compare_main([str(tmp_path / "c"), str(tmp_path / "a")])
    out = capsys.readouterr().out
    assert (
        "size budget: 0 tensors of A and 2 of B were not saved (--max-tensor-bytes); "
        "2 differing rows are compared by statistics only"
    ) in out
    res = compare_dumps(tmp_path / "c", tmp_path / "a")
    assert res.full and res.rows_without_tensors == 2
    assert [r.metrics == {} for r in res.rows if not r.identical] == [True, True]


def test_full_tensor_fail_thresholds_from_the_command_line(tmp_path, capsys):
    a = train(tmp_path / "a", mlp(), steps=1, full_tensors=True)
    bad = mlp()
    with torch.no_grad():
        bad[2].weight[3] += 0.5
    b = train(tmp_path / "b", bad, steps=1, full_tensors=True)
    compare_main([str(b), str(a), "--cosine-fail", "0.999999", "--atol-fail", "1e-9"])
    out = capsys.readouterr().out
    assert "cosine < 0.999999, max abs err > 1e-09" in out
    fwd = next(line for line in out.splitlines() if line.startswith("first divergence (forward)"))
    assert "< 0.999999" in fwd and "> 1e-09" in fwd
    compare_main([str(b), str(a)])
    assert "cosine < 0.9, max abs err > 1.0" in capsys.readouterr().out


def test_tensor_metrics_against_hand_values():
    a = np.array([1.0, 2.0, 0.0, 4.0], dtype=np.float32)
    b = np.array([1.0, 2.002, 0.0, 4.0], dtype=np.float32)
    m = tensor_metrics(a, b, chunk=3)  # chunk smaller than the array: the streaming path
    assert abs(m["max_abs_err"] - 0.002) < 1e-6
    assert abs(m["max_rel_err"] - 0.002 / 2.002) < 1e-6
    assert m["share_rel_gt_0.1pct"] == 0 and m["share_rel_gt_0.5pct"] == 0  # 0.0999% is within 0.1%
    assert m["cosine"] > 0.9999999
    c = np.array([-1.0, -2.0, 0.0, -4.0], dtype=np.float32)
    assert abs(tensor_metrics(c, a)["cosine"] + 1) < 1e-6
    assert tensor_metrics(np.array([1.0, 1.0]), np.array([1.0, 0.0]))["share_rel_gt_0.5pct"] == 0.5


def _reference_metrics(a, b):
    """The definitions, computed directly in float64 on whole arrays."""
    x, y = a.astype(np.float64), b.astype(np.float64)
    d = np.abs(x - y)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = d / np.abs(y)
    r[(d == 0) & (y == 0)] = 0.0
    cos = float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))
    return {
        "cosine": cos,
        "max_abs_err": float(d.max()),
        "max_rel_err": float(r.max()),
        "euclidean": float(np.linalg.norm(d)),
        "share_rel_gt_0.1pct": float(np.mean(r > 1e-3)),
        "share_rel_gt_0.5pct": float(np.mean(r > 5e-3)),
    }


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_streamed_metrics_match_the_definitions(tmp_path, dtype):
    """Saved tensors streamed in chunks (memory-mapped, and the readinto fallback) give the same
    numbers as the definitions computed on whole arrays: chunks that straddle the end, identical
    chunks (skipped after max |a - b| = 0), zeros in both (0/0 is no error), a zero only in B
    (infinite relative error)."""
    from torchport.probe.dump import NpyStream

    rng = np.random.default_rng(0)
    n = 10_007
    a = rng.standard_normal(n).astype(dtype)
    b = (a * (1 + rng.standard_normal(n) * 3e-3)).astype(dtype)
    b[:3000] = a[:3000]  # the first chunks are identical
    a[5000:5100] = 0
    b[5000:5100] = 0
    a[6000] = 0.5
    b[6000] = 0
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    want = _reference_metrics(a, b)
    assert want["max_rel_err"] == float("inf") and 0.1 < want["share_rel_gt_0.1pct"] < 0.9

    def check(got):
        for k, v in want.items():
            assert got[k] == pytest.approx(v, rel=1e-5, abs=1e-9), k

    norms = (float(np.linalg.norm(a.astype(np.float64))), float(np.linalg.norm(b.astype(np.float64))))
    for chunk in (1000, 4096, 1 << 17):
        mapped = tensor_metrics(
            NpyStream(tmp_path / "a.npy", {}), NpyStream(tmp_path / "b.npy", {}), chunk=chunk
        )
        check(mapped)
        check(tensor_metrics(a, b, chunk=chunk, norms=norms))
        sa, sb = NpyStream(tmp_path / "a.npy", {}), NpyStream(tmp_path / "b.npy", {})
        sa.chunks, sb.chunks = sa._read_chunks, sb._read_chunks  # where mmap is unavailable
        assert tensor_metrics(sa, sb, chunk=chunk) == mapped


def test_rewriting_a_dump_replaces_it_atomically(tmp_path):
    out = tmp_path / "d"
    train(out, mlp(), steps=2)
    first = open_dump(out).count
    train(out, mlp(), steps=1)
    assert open_dump(out).count < first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # no partial or old directories left


def test_steps_limit_and_step_numbers(tmp_path):
    train(tmp_path / "d", mlp(), steps=3)
    steps = sorted({r["step"] for r in _records(tmp_path / "d")})
    assert steps == [0, 1, 2]


def test_script_mode_records_top_level_modules(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import torch
            import torch.nn as nn
            torch.manual_seed(0)
            model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
            loss_fn = nn.MSELoss()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(5):
                loss = loss_fn(model(torch.ones(3, 4)), torch.zeros(3, 2))
                loss.backward()
                opt.step()
                opt.zero_grad()
            print("args", sys.argv[1:])
            """
        )
    )
    code = probe_main(["--out", str(tmp_path / "d"), "--steps", "2", "--", str(script), "--lr", "3"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "args ['--lr', '3']" in out
    recs = _records(tmp_path / "d")
    names = {r["name"] for r in recs}
    assert {"", "0", "1", "2", "MSELoss"} <= names  # the model and the loss, both top-level
    assert {r["step"] for r in recs} == {0, 1}  # --steps 2 stops after two optimizer steps
    # Each step holds the model's and the loss's forward and backward records: calling the loss
    # module does not start a new step, optimizer.step() does.
    for step in (0, 1):
        got = {(r["name"], r["dir"]) for r in recs if r["step"] == step}
        assert {("0", "forward"), ("0", "backward"), ("MSELoss", "forward"), ("MSELoss", "backward")} <= got
    assert len([r for r in recs if r["step"] == 0]) == len([r for r in recs if r["step"] == 1])
    man = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert man["status"] == "ok" and man["command"][1:] == ["--lr", "3"]


def test_script_that_raises_still_leaves_a_dump(tmp_path, capsys):
    script = tmp_path / "boom.py"
    script.write_text(
        "import torch\nm = torch.nn.Linear(2, 2)\nm(torch.ones(1, 2))\nraise ValueError('boom')\n"
    )
    code = probe_main(["--out", str(tmp_path / "d"), "--", str(script)])
    _, err = capsys.readouterr()
    assert code == 1 and "ValueError: boom" in err
    man = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert man["status"] == "script raised an exception" and man["records"] == 2


def test_reports_text_csv_html(tmp_path, capsys):
    a = train(tmp_path / "a", mlp(), steps=1)
    bad = mlp()
    with torch.no_grad():
        bad[2].weight[3] += 0.5
    b = train(tmp_path / "b", bad, steps=1)
    assert compare_main([str(b), str(a)]) == 1
    text = capsys.readouterr().out
    assert "first divergence (forward):    2 (Linear) forward call 0 output[0]  FAIL" in text
    assert "first divergence (backward):   2 (Linear) backward call 0 grad_input[0]" in text
    assert compare_main([str(b), str(a), "--format", "csv", "-o", str(tmp_path / "r.csv")]) == 1
    lines = (tmp_path / "r.csv").read_text().splitlines()
    assert lines[0].startswith("seq,direction,name,type,call,io,slot,step,status")
    assert len(lines) == 1 + compare_dumps(b, a).a.count
    assert compare_main([str(b), str(a), "--format", "html", "-o", str(tmp_path / "r.html")]) == 1
    page = (tmp_path / "r.html").read_text()
    assert page.count("<tr") == len(lines) and "#ffd6d6" in page
    # user thresholds: a huge --rtol lets the statistics rows pass
    assert compare_main([str(b), str(a), "--rtol", "100"]) == 0


def test_import_torchport_stays_cheap():
    code = "import sys, torchport; p = torchport.__all__; print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"
    code = "import sys, torchport.probe.compare; print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"  # comparing needs numpy only


def test_accelerator_path_batches_statistics_and_matches_numpy(tmp_path):
    """The on-device statistics (used for non-CPU tensors, copied to the host in one batch per
    flush) agree with the numpy ones; run here on CPU tensors by switching the path."""
    x = torch.randn(6, 5, dtype=torch.float64).float()
    x[1, 2] = float("nan")
    x[4, 4] = float("-inf")
    for host in (True, False):
        p = torchport.probe(m := Fixed(), out=tmp_path / f"d{host}")
        p._host_stats = host
        with p:
            m(x[:3].clone())
            m(x.bfloat16())
    host_recs, dev_recs = _records(tmp_path / "dTrue"), _records(tmp_path / "dFalse")
    assert len(host_recs) == len(dev_recs) == 4
    for h, d in zip(host_recs, dev_recs):
        assert (h["nan"], h["inf"]) == (d["nan"], d["inf"])
        for k in ("min", "max", "mean", "norm"):
            if isinstance(h[k], str):
                assert h[k] == d[k]
            else:
                assert abs(h[k] - d[k]) <= 1e-5 * max(1.0, abs(h[k]))
        assert "hash" not in d  # a hash would need the bytes on the host: not in statistics mode
    assert dev_recs[3]["nan"] == 1 and dev_recs[3]["inf"] == 1  # x*2 keeps the NaN and the -inf


def test_target_option_runs_a_cuda_script_on_cpu(tmp_path, capsys):
    pytest.importorskip("torchport.runtime")
    script = tmp_path / "cuda_train.py"
    script.write_text(
        "import torch\n"
        "m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU()).cuda()\n"
        "m(torch.ones(2, 4).cuda()).sum().backward()\n"
    )
    code = probe_main(["--out", str(tmp_path / "d"), "--target", "cpu", "--", str(script)])
    capsys.readouterr()
    assert code == 0
    recs = _records(tmp_path / "d")
    assert {r["device"] for r in recs} == {"cpu"}
    assert {(r["name"], r["dir"]) for r in recs} >= {("0", "forward"), ("1", "backward")}


def test_filter_keeps_matching_names_only(tmp_path):
    m = mlp()
    x = torch.randn(4, 16)
    with torchport.probe(m, out=tmp_path / "d", filter=r"^[34]$"):
        m(x).sum().backward()
    recs = _records(tmp_path / "d")
    assert {r["name"] for r in recs} == {"3", "4"}
    assert {r["dir"] for r in recs} == {"forward", "backward"}
    with torchport.probe(m, out=tmp_path / "ops", level="op", filter="addmm"):
        m(x)
    ops = _records(tmp_path / "ops")
    # four Linear layers (0, 2, 3, 4), each one addmm: bias, input and weight in, one result out
    assert {r["name"] for r in ops} == {"aten.addmm.default"}
    assert len(ops) == 4 * 4
    assert [r["module"] for r in ops if r["io"] == "out"] == ["0", "2", "3", "4"]
