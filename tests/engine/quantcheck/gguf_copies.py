"""Copies of the default GGUF for the quantization check's tests: requantized by llama.cpp, or with two tokens swapped."""

from __future__ import annotations

import struct
from pathlib import Path

QUANTS = {"Q8_0": 7, "Q4_0": 2, "Q2_K": 10}  # llama_ftype values


def requantize(source: str, folder: Path, names: tuple[str, ...] = tuple(QUANTS)) -> tuple[dict[str, str], dict[str, str]]:
    """`llama_model_quantize` (allow_requantize) into `folder`: the paths and what the quantizer logged, by name."""
    import llama_cpp

    from engine.runners.llamacpp.load import llama_log

    log = llama_log()
    made, logged = {}, {}
    for name in names:
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype, params.allow_requantize, params.nthread = QUANTS[name], True, 1
        mark = log.mark()
        target = folder / f"SmolLM2-135M-Instruct.{name}.gguf"
        if llama_cpp.llama_model_quantize(source.encode(), str(target).encode(), params) != 0:
            raise RuntimeError(f"llama.cpp could not quantize to {name}")
        made[name], logged[name] = str(target), " ".join(log.since(mark, 1))
    return made, logged


def swap_two_tokens(source: str, target: Path, first: int, second: int) -> None:
    """A copy of the GGUF whose tokens `first` and `second` trade texts (same lengths, so offsets stay)."""
    data = bytearray(Path(source).read_bytes())
    key = b"tokenizer.ggml.tokens"
    at = data.index(struct.pack("<Q", len(key)) + key) + 8 + len(key)
    _array, item_type, count = struct.unpack_from("<IIQ", data, at)
    assert item_type == 8, "an array of strings"
    offset, spans = at + 16, []
    for _ in range(count):
        (length,) = struct.unpack_from("<Q", data, offset)
        spans.append((offset + 8, offset + 8 + length))
        offset += 8 + length
    (a0, a1), (b0, b1) = spans[first], spans[second]
    assert a1 - a0 == b1 - b0, "tokens of the same length keep every offset"
    data[a0:a1], data[b0:b1] = data[b0:b1], data[a0:a1]
    target.write_bytes(bytes(data))
