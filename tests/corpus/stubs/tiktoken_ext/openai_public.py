"""A stand-in for tiktoken's "gpt2" encoding, for the llm.c harness (tests/corpus/entry.py).

tiktoken downloads the GPT-2 BPE files on first use, and nothing outside PyPI and Debian can be
reached here. tiktoken finds its encodings in the `tiktoken_ext` namespace package; this directory
comes first on the harness's PYTHONPATH, so `tiktoken.get_encoding("gpt2")` in llm.c's unchanged
train_gpt2.py builds this encoding instead: byte-level tokens 0-255 (no merges) and GPT-2's
`<|endoftext|>` = 50256, with GPT-2's split pattern. Training on the harness's random token file
never encodes text, so only the end-of-text token matters there.
"""

from __future__ import annotations

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def gpt2() -> dict:
    return {
        "name": "gpt2",
        "pat_str": GPT2_PATTERN,
        "mergeable_ranks": {bytes([i]): i for i in range(256)},
        "special_tokens": {"<|endoftext|>": 50256},
    }


ENCODING_CONSTRUCTORS = {"gpt2": gpt2}
