"""Started by torchport_autohook.pth when TORCHPORT_TARGET is set: `TORCHPORT_TARGET=cpu python train.py`.

The .pth line only tests the variable, so python start-up costs nothing when it is unset. When it is set, this
module waits for the script's own `import torch` and enables the redirect right after it (so a process that
never imports torch pays nothing, and the order of .pth files in site-packages does not matter).

Switch the hook off by unsetting TORCHPORT_TARGET (or set TORCHPORT_AUTOHOOK=0 to keep the variable for
`import torchport.auto`), or delete torchport_autohook.pth from site-packages.
"""

from __future__ import annotations

import os
import sys
import types


def _enable(_torch: object = None) -> None:
    try:
        import torchport.auto  # noqa: F401 - enables the redirect
    except SystemExit as e:  # a clear message was printed; stop like the script would
        if _in_ipython():  # but never kill a Jupyter kernel: `%torchport TARGET` can still turn it on
            print(
                "torchport: the redirect is off in this kernel; `%load_ext torchport` then `%torchport cpu` "
                "(or another target that runs here) turns it on",
                file=sys.stderr,
            )
            return
        sys.stderr.flush()
        os._exit(e.code if isinstance(e.code, int) else 2)


def _in_ipython() -> bool:
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return get is not None and get() is not None


def _main() -> None:
    if os.environ.get("TORCHPORT_AUTOHOOK", "1") == "0":
        return
    if "torch" in sys.modules:
        _enable()
        return
    from torchport._lazy import PostImport

    finder = PostImport()

    def on_torch(module: types.ModuleType) -> None:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        child = sys.modules.get("torchport.rehearse._child")
        if child is not None and hasattr(child, "AFTER_ACTIVATION"):
            # a rank spawned under `torchport rehearse`: its rehearsal device, which provides the target's
            # package, is turned on right after this import; the redirect follows it
            child.AFTER_ACTIVATION.append(_enable)
            return
        _enable(module)

    finder.callbacks["torch"] = on_torch
    sys.meta_path.insert(0, finder)


_main()
