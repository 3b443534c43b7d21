"""Random-weights text models of the vision families' architectures (gemma3, qwen2vl, qwen3vl, llama), for the
picture tests.

Each file takes its tokenizer and chat template from a real GGUF (the default model's), so prompts
render and tokenize as usual, and has the family's own tensors and hyper-parameters as llama.cpp
reads them: Gemma 3's q/k norms and post-norms, Qwen2-VL's q/k/v biases and M-RoPE sections, Qwen3-VL's
q/k norms, interleaved M-RoPE and deepstack layers (its input rows carry a projector's deeper features). The
weights are noise, but scaled so that attention is far from uniform and the logits are spread (the
output matrix is large): positions and the picture's rows change the answer, and the first tokens
of a greedy answer are clear winners, not near-ties that rounding could flip.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ARCHITECTURES = ("gemma3", "qwen2vl", "qwen3vl", "llama")  # Gemma 3, Qwen2/2.5-VL, Qwen3-VL, SmolVLM (a SmolLM2)


@dataclass(frozen=True)
class TextShape:
    layers: int = 2
    embedding: int = 64
    feed_forward: int = 128
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 16
    context: int = 4096
    sliding_window: int = 128  # Gemma 3's
    deepstack_layers: int = 1  # Qwen3-VL's: the first layers that add a slice of the input row


def write_vision_text_model(path: Path, source: str | Path | Any, arch: str, shape: TextShape = TextShape(),
                            seed: int = 0, extra_tokens: tuple[str, ...] = ()) -> Path:
    """A `arch` GGUF of `shape` with `source`'s tokenizer (a path, or a GGUFReader already open: reading a
    vocabulary takes seconds), plus `extra_tokens` as user-defined tokens: the markers a projector looks
    up in the vocabulary, as a real vision model's tokenizer has them."""
    import gguf

    if arch not in ARCHITECTURES:
        raise ValueError(f"no random {arch} text model is written here ({', '.join(ARCHITECTURES)})")
    reader = source if isinstance(source, gguf.GGUFReader) else gguf.GGUFReader(source)
    writer = gguf.GGUFWriter(str(path), arch)
    vocab = _copy_tokenizer(reader, writer, extra_tokens)
    writer.add_string("general.name", f"random {arch} {shape.layers}x{shape.embedding}")
    for key, value in _hyperparameters(arch, shape).items():
        if isinstance(value, list):
            writer.add_array(f"{arch}.{key}", value)
        elif isinstance(value, float):
            writer.add_float32(f"{arch}.{key}", value)
        else:
            writer.add_uint32(f"{arch}.{key}", value)
    rng = np.random.default_rng(seed)
    for name, numpy_shape, std in _tensors(arch, shape, vocab):
        if std is None:
            data = np.ones(numpy_shape, np.float32)
        else:
            data = (rng.standard_normal(numpy_shape, dtype=np.float32) * std).astype(np.float32)
        writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _hyperparameters(arch: str, shape: TextShape) -> dict[str, Any]:
    common: dict[str, Any] = {
        "context_length": shape.context, "embedding_length": shape.embedding, "block_count": shape.layers,
        "feed_forward_length": shape.feed_forward, "attention.head_count": shape.heads,
        "attention.head_count_kv": shape.kv_heads, "attention.layer_norm_rms_epsilon": 1e-6,
        "rope.freq_base": 10000.0,
    }
    if arch == "gemma3":  # a sliding window on five layers in six, as the real ones have (1,024 there)
        return {**common, "attention.key_length": shape.head_dim, "attention.value_length": shape.head_dim,
                "attention.sliding_window": shape.sliding_window}
    if arch == "llama":
        return common
    # Qwen2-VL: head_dim = embedding / heads; its rotary half split into M-RoPE's (t, h, w, e) sections
    # in Qwen2.5-VL's proportions (16, 24, 24, 0 of 64), Qwen3-VL's (24, 20, 20, 0)
    half = shape.embedding // shape.heads // 2
    if arch == "qwen2vl":
        sections = [half // 4, 3 * half // 8, 3 * half // 8, 0]
    else:
        sections = [0, 5 * half // 16, 5 * half // 16, 0]
    sections[0] += half - sum(sections)
    rope = {"rope.dimension_count": shape.embedding // shape.heads, "rope.dimension_sections": sections}
    if arch == "qwen3vl":
        return {**common, **rope, "n_deepstack_layers": shape.deepstack_layers}
    return {**common, **rope}


def _tensors(arch: str, shape: TextShape, vocab: int) -> list[tuple[str, tuple[int, ...], float | None]]:
    """(name, numpy shape, std or None for a norm of ones), in llama.cpp's names."""
    e, f = shape.embedding, shape.feed_forward
    head = shape.head_dim if arch == "gemma3" else e // shape.heads
    q, kv = shape.heads * head, shape.kv_heads * head
    # Large q/k weights: attention that depends on positions; a large output matrix: spread logits.
    qk, other = 1.0 / np.sqrt(e), 0.5 / np.sqrt(e)
    # Gemma scales token embeddings by sqrt(e) (not a picture's rows): either way the residual starts near RMS 1.
    embedding = 1.0 / np.sqrt(e) if arch == "gemma3" else 1.0
    out = [("token_embd.weight", (vocab, e), embedding), ("output_norm.weight", (e,), None),
           ("output.weight", (vocab, e), 4.0 / np.sqrt(e))]
    for i in range(shape.layers):
        b = f"blk.{i}"
        out += [(f"{b}.attn_norm.weight", (e,), None), (f"{b}.attn_q.weight", (q, e), qk),
                (f"{b}.attn_k.weight", (kv, e), qk), (f"{b}.attn_v.weight", (kv, e), other),
                (f"{b}.attn_output.weight", (e, q), other), (f"{b}.ffn_norm.weight", (e,), None),
                (f"{b}.ffn_gate.weight", (f, e), other), (f"{b}.ffn_up.weight", (f, e), other),
                (f"{b}.ffn_down.weight", (e, f), other)]
        if arch in ("gemma3", "qwen3vl"):
            out += [(f"{b}.attn_q_norm.weight", (head,), None), (f"{b}.attn_k_norm.weight", (head,), None)]
        if arch == "gemma3":
            out += [(f"{b}.post_attention_norm.weight", (e,), None), (f"{b}.post_ffw_norm.weight", (e,), None)]
        elif arch == "qwen2vl":
            out += [(f"{b}.attn_q.bias", (q,), 0.1), (f"{b}.attn_k.bias", (kv,), 0.1), (f"{b}.attn_v.bias", (kv,), 0.1)]
    return out


def _copy_tokenizer(reader: Any, writer: Any, extra: tuple[str, ...]) -> int:
    """The source's tokenizer.* fields (its chat template among them); returns the vocabulary size."""
    import gguf

    vocab = 0
    for field in reader.fields.values():
        if not field.name.startswith("tokenizer."):
            continue
        value = field.contents()
        if field.name == "tokenizer.ggml.tokens":
            value = [*value, *extra]
            vocab = len(value)
        elif field.name == "tokenizer.ggml.token_type":
            value = [*value, *([gguf.TokenType.USER_DEFINED] * len(extra))]
        elif field.name == "tokenizer.ggml.scores":
            value = [*value, *([0.0] * len(extra))]
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, value, field.types[0], sub_type=sub_type)
    if not vocab:
        raise ValueError("the source GGUF has no tokenizer.ggml.tokens")
    return vocab
