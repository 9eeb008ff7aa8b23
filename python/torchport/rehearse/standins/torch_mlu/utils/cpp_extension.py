"""Stand-in of torch_mlu.utils.cpp_extension: MLUExtension exists, but rehearsal cannot build BANG C."""

from typing import Any


def MLUExtension(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 (the vendor's name)
    raise NotImplementedError(
        "torch_mlu.utils.cpp_extension.MLUExtension: torchport rehearse cannot build MLU (BANG C) sources; "
        "port the CUDA sources first (see the migrate report)"
    )
