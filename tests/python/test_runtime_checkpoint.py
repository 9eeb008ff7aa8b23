"""torch.load of a checkpoint saved on CUDA (storages tagged "cuda:0") restores onto the target, for every
form of map_location: none, a string, a torch.device, a dict and a callable (that may call storage.cuda)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from runtime_testlib import FIXTURES, enabled, run_python, sites


@pytest.fixture(scope="module")
def cuda_ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ckpt") / "cuda.pt"
    done = run_python([str(FIXTURES / "make_cuda_checkpoint.py"), str(out)])
    assert done.returncode == 0, done.stderr
    return out


def _expected() -> dict:
    torch.manual_seed(0)
    return torch.nn.Linear(3, 2).state_dict()


def _check(ckpt: dict) -> None:
    want = _expected()
    assert ckpt["step"] == 7
    assert ckpt["extra"].tolist() == [0, 1, 2, 3]
    for k, v in want.items():
        assert ckpt["model"][k].device.type == "cpu"
        assert torch.equal(ckpt["model"][k], v)


def test_plain_load_fails_without_redirect(cuda_ckpt: Path) -> None:
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.load(cuda_ckpt)


@pytest.mark.parametrize(
    "map_location",
    [None, "cuda", "cuda:0", torch.device("cuda", 0), {"cuda:0": "cuda:0"}, {"cuda:0": torch.device("cuda")}],
    ids=["none", "str", "str-index", "device", "dict", "dict-device"],
)
def test_load_cuda_checkpoint(cuda_ckpt: Path, map_location: object) -> None:
    with enabled("cpu") as s:
        _check(torch.load(cuda_ckpt, map_location=map_location))
        assert any(site.api == "torch.load" for site in sites(s))


def test_load_with_callables(cuda_ckpt: Path) -> None:
    seen: list[str] = []

    def to_gpu(storage: object, loc: str) -> object:
        seen.append(loc)
        return storage.cuda()  # what CUDA users write

    def default(storage: object, loc: str) -> None:
        return None  # "restore as saved"

    with enabled("cpu"):
        _check(torch.load(cuda_ckpt, map_location=to_gpu))
        _check(torch.load(cuda_ckpt, map_location=default))
        _check(torch.serialization.load(cuda_ckpt))
    assert seen and set(seen) == {"cuda:0"}  # the user's function saw the saved location


def test_round_trip_with_the_amp_script_checkpoint(tmp_path: Path, cuda_ckpt: Path) -> None:
    with enabled("cpu"):
        model = torch.nn.Linear(3, 2).cuda()
        model.load_state_dict(torch.load(cuda_ckpt)["model"])
        out = model(torch.ones(1, 3, device="cuda"))
    want = torch.nn.Linear(3, 2)
    want.load_state_dict(_expected())
    assert torch.equal(out, want(torch.ones(1, 3)))


def test_unchanged_resume_script_matches_cpu(cuda_ckpt: Path, tmp_path: Path) -> None:
    from runtime_testlib import run_torchport

    run = run_torchport(
        [
            "run",
            "--target",
            "cpu",
            "--quiet",
            str(FIXTURES / "resume.py"),
            str(cuda_ckpt),
            str(tmp_path / "r.json"),
        ]
    )
    assert run.returncode == 0, run.stderr
    ref = run_python([str(FIXTURES / "resume_cpu.py"), str(cuda_ckpt), str(tmp_path / "c.json")])
    assert ref.returncode == 0, ref.stderr
    import json

    got, want = (json.loads((tmp_path / n).read_text()) for n in ("r.json", "c.json"))
    assert got["step"] == 7 and got["losses"] == want["losses"] and got["losses"][-1] < got["losses"][0]


def test_plain_load_is_logged_only_when_the_checkpoint_has_cuda_storages(
    cuda_ckpt: Path, tmp_path: Path
) -> None:
    host = tmp_path / "host.pt"
    torch.save({"w": torch.ones(2)}, host)
    with enabled("cpu") as s:
        torch.load(host)  # saved on the host: nothing was redirected, so no line
        assert not [x for x in sites(s) if x.api == "torch.load"]
        torch.load(cuda_ckpt)
        (line,) = [x for x in sites(s) if x.api == "torch.load"]
    assert line.before == f"torch.load({str(cuda_ckpt)!r}) [storages saved on cuda:0]"
    assert line.after == f"torch.load({str(cuda_ckpt)!r}, map_location=<cuda:0 -> cpu>)"


def test_a_vendor_replaced_torch_load_is_redirected_and_kept(
    cuda_ckpt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch_npu's import sets `torch.load` to its own load and leaves `torch.serialization.load` torch's: the
    script's `torch.load` is then the vendor's, wrapped (before, it was left unwrapped and a CUDA checkpoint
    failed under `torchport run` on the vendor's package, where transfer_to_npu loads it)."""
    import torch.serialization as ser

    calls: list[object] = []
    orig = ser.load

    def vendor_load(f: object, map_location: object = None, *a: object, **kw: object) -> object:
        calls.append(map_location)
        return orig(f, map_location, *a, **kw)

    monkeypatch.setattr(torch, "load", vendor_load)
    with enabled("cpu"):
        assert torch.load is not vendor_load and torch.load.__wrapped__ is vendor_load  # type: ignore[attr-defined]
        _check(torch.load(cuda_ckpt, map_location="cuda:0"))
        _check(ser.load(cuda_ckpt))  # torch's own, wrapped as before
    assert len(calls) == 1 and str(calls[0]) == "cpu"
    assert torch.load is vendor_load  # put back
