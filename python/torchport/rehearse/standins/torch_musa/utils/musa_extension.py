"""Stand-in of torch_musa.utils.musa_extension: MUSAExtension exists; rehearsal cannot build MUSA sources."""

from typing import Any


def MUSAExtension(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 (the vendor's name)
    raise NotImplementedError(
        "torch_musa.utils.musa_extension.MUSAExtension: torchport rehearse cannot build MUSA sources; "
        "port the "
        ".cu sources with torch_musa's SimplePorting first (see the migrate report)"
    )
