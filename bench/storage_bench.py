"""Object-storage transfers: torchport's path manager against plain fsspec copies, in one run.

A moto S3 server on 127.0.0.1 holds the bucket. For a tree of files (default 1 GiB in 64 files):

- upload:   plain `s3fs.put(dir, url, recursive=True)` against `path_manager.upload(dir, url)`;
- download: plain `s3fs.get(url, dir, recursive=True)` against `path_manager.download(dir, url)`;
- re-run:   the path manager again with nothing changed (it compares size and ETag, transfers nothing).

Each is repeated (--repeat, default 5); the median and the spread (min-max) are printed with the ratio
plain/ours (>= 0.9 is the goal: ours no slower than 1/0.9 of plain). Run it on a quiet machine and note
the load average it prints.

    python bench/storage_bench.py [--mib 1024] [--files 64] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from torchport.cloud import path_manager as pm  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _timed(fn: Callable[[], object], repeat: int, before: Callable[[], None]) -> list[float]:
    out = []
    for _ in range(repeat):
        before()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _fmt(xs: list[float]) -> str:
    return f"median {statistics.median(xs):7.2f} s  (min {min(xs):.2f}, max {max(xs):.2f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--files", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)

    port = _port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}",
        AWS_EC2_METADATA_DISABLED="true",
        TORCHPORT_STORAGE_QUIET="1",
    )
    import s3fs

    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": os.environ["AWS_ENDPOINT_URL"]})
    fs.mkdir("bench-plain")
    fs.mkdir("bench-ours")
    tmp = Path(tempfile.mkdtemp(prefix="torchport-storage-bench-"))
    try:
        src = tmp / "src"
        src.mkdir()
        per = args.mib * (1 << 20) // args.files
        for i in range(args.files):
            (src / f"shard_{i:04d}.bin").write_bytes(os.urandom(per))
        print(f"load average: {os.getloadavg()}; {args.files} files, {args.mib} MiB, workers {pm._workers()}")

        def fresh_manifest() -> None:
            m = src / ".torchport-storage.json"
            if m.exists():
                m.unlink()

        up_plain = _timed(
            lambda: fs.put(str(src) + "/", "bench-plain/d/", recursive=True), args.repeat, lambda: None
        )
        up_ours = _timed(lambda: pm.upload(str(src), "s3://bench-ours/d"), args.repeat, fresh_manifest)
        up_again = _timed(lambda: pm.upload(str(src), "s3://bench-ours/d"), args.repeat, lambda: None)

        dst_plain, dst_ours = tmp / "plain", tmp / "ours"

        def clear(d: Path) -> Callable[[], None]:
            return lambda: shutil.rmtree(d, ignore_errors=True)

        down_plain = _timed(
            lambda: fs.get("bench-plain/d/", str(dst_plain) + "/", recursive=True),
            args.repeat,
            clear(dst_plain),
        )
        down_ours = _timed(
            lambda: pm.download(str(dst_ours), "s3://bench-ours/d"), args.repeat, clear(dst_ours)
        )
        down_again = _timed(
            lambda: pm.download(str(dst_ours), "s3://bench-ours/d"), args.repeat, lambda: None
        )

        print(f"upload   plain fsspec  {_fmt(up_plain)}")
        print(f"upload   torchport     {_fmt(up_ours)}")
        print(f"upload   unchanged     {_fmt(up_again)}")
        print(f"download plain fsspec  {_fmt(down_plain)}")
        print(f"download torchport     {_fmt(down_ours)}")
        print(f"download unchanged     {_fmt(down_again)}")
        up_ratio = statistics.median(up_plain) / statistics.median(up_ours)
        down_ratio = statistics.median(down_plain) / statistics.median(down_ours)
        print(f"throughput ours/plain: upload {up_ratio:.2f}x, download {down_ratio:.2f}x (goal >= 0.9)")
        up_skip = statistics.median(up_plain) / statistics.median(up_again)
        down_skip = statistics.median(down_plain) / statistics.median(down_again)
        print(
            f"re-run with nothing changed: upload {up_skip:.0f}x, download {down_skip:.0f}x faster than plain"
        )
        print(f"load average after: {os.getloadavg()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
