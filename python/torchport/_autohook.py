"""Started by torchport_autohook.pth when TORCHPORT_TARGET is set: `TORCHPORT_TARGET=cpu python train.py`.

The .pth line only tests the variable, so python start-up costs nothing when it is unset. Switch the hook off
by unsetting TORCHPORT_TARGET (or set TORCHPORT_AUTOHOOK=0 to keep the variable for `import torchport.auto`),
or delete torchport_autohook.pth from site-packages.
"""

from __future__ import annotations

import os
import sys


def _main() -> None:
    if os.environ.get("TORCHPORT_AUTOHOOK", "1") == "0":
        return
    try:
        import torchport.auto  # noqa: F401 - enables the redirect
    except SystemExit as e:  # a clear message was printed; stop like the script would
        sys.stderr.flush()
        os._exit(e.code if isinstance(e.code, int) else 2)


_main()
