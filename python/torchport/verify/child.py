"""One side of a `torchport verify` run: `python -m torchport.verify.child CONFIG.json`.

Installs the recorder (recorder.py), then runs the entry the way the config says:
- `run`: through `torchport run --target T` (the unchanged CUDA original, redirected);
- `native`: like `python script.py` (a migrated cpu / accelerator tree);
- `rehearse`: through `torchport rehearse --target T` (a migrated npu / mlu / musa tree).

Under torchrun each worker runs this module. Workers started by `torch.multiprocessing.spawn` get
the recorder too: the spawned function is wrapped (`_Worker`) so that it installs the recorder in
the worker before it runs.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Optional, Sequence

from torchport._command import guarded
from torchport.verify._inject import _install


def _rehearse(argv: list[str]) -> int:
    """`torchport rehearse ARGV`, in this process."""
    from torchport.rehearse.cli import main

    return main(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    with open(args[0], encoding="utf-8") as f:
        cfg: dict[str, Any] = json.load(f)
    rec = _install(cfg)
    entry: list[str] = cfg["entry"]  # [script, *args] or ["-m", module, *args]
    mode = cfg["mode"]
    from torchport.verify.recorder import VerifyStop

    try:
        if mode == "run":
            from torchport.runtime.cli import main as run_main

            code = run_main(["--target", cfg["target"], "--cuda-available", "target", "--quiet", *entry])
        elif mode == "rehearse":
            code = guarded("torchport rehearse", lambda: _rehearse(["--target", cfg["target"], *entry]))
        else:
            from torchport.runtime import run_module, run_script

            code = run_module(entry[1], entry[2:]) if entry[0] == "-m" else run_script(entry[0], entry[1:])
    except VerifyStop:
        code = 0
    rec.finish("ok" if code == 0 else f"exit code {code}", code)
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    from torchport._leave import leave

    # The run is recorded: leave without the C++ static teardown, which can abort a gloo rank under
    # torchrun after a successful run (seen in CI on ddp_torchrun.py: "exit code 1 after 3 of 3
    # steps"), as _Worker does for spawned ranks.
    leave(main())
