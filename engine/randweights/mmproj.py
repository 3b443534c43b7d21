"""A random-weights llama.cpp vision projector (mmproj GGUF), for tests of the picture path.

The LLaVA "mlp" projector is the simplest one clip.cpp loads: a small ViT
(patch embedding, position embedding, pre-norm blocks) and a two-layer MLP
into the text model's width, with no M-RoPE and causal decoding in the text
model. Its output is noise; the token counts, positions and batching are real.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

IMAGE_SIZE = 32
PATCH_SIZE = 8
WIDTH = 32
HEADS = 2
FFN = 64
BLOCKS = 1


def n_image_tokens() -> int:
    """How many embeddings (text-model positions) one picture becomes."""
    return (IMAGE_SIZE // PATCH_SIZE) ** 2


def write_mmproj(path: Path, n_embd: int, seed: int = 0) -> Path:
    """Write a tiny mlp projector whose output width is `n_embd` (the text model's)."""
    import gguf

    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), "clip")
    writer.add_bool("clip.has_vision_encoder", True)
    writer.add_bool("clip.has_text_encoder", False)
    writer.add_bool("clip.has_llava_projector", True)
    writer.add_string("clip.projector_type", "mlp")
    writer.add_bool("clip.use_gelu", True)
    writer.add_uint32("clip.vision.image_size", IMAGE_SIZE)
    writer.add_uint32("clip.vision.patch_size", PATCH_SIZE)
    writer.add_uint32("clip.vision.embedding_length", WIDTH)
    writer.add_uint32("clip.vision.feed_forward_length", FFN)
    writer.add_uint32("clip.vision.projection_dim", n_embd)
    writer.add_uint32("clip.vision.attention.head_count", HEADS)
    writer.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-5)
    writer.add_uint32("clip.vision.block_count", BLOCKS)
    writer.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    writer.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])

    def add(name: str, *shape: int, value: float | None = None) -> None:
        # numpy order (the ggml shape reversed)
        data = np.full(shape, value, np.float32) if value is not None else rng.normal(0, 0.02, shape).astype(np.float32)
        writer.add_tensor(name, data)

    n_patches = n_image_tokens()
    add("v.patch_embd.weight", WIDTH, 3, PATCH_SIZE, PATCH_SIZE)
    add("v.class_embd", WIDTH)
    add("v.position_embd.weight", n_patches + 1, WIDTH)
    add("v.pre_ln.weight", WIDTH, value=1.0)
    add("v.pre_ln.bias", WIDTH, value=0.0)
    for i in range(BLOCKS):
        b = f"v.blk.{i}"
        for role in ("attn_q", "attn_k", "attn_v", "attn_out"):
            add(f"{b}.{role}.weight", WIDTH, WIDTH)
            add(f"{b}.{role}.bias", WIDTH, value=0.0)
        for ln in ("ln1", "ln2"):
            add(f"{b}.{ln}.weight", WIDTH, value=1.0)
            add(f"{b}.{ln}.bias", WIDTH, value=0.0)
        add(f"{b}.ffn_up.weight", FFN, WIDTH)
        add(f"{b}.ffn_up.bias", FFN, value=0.0)
        add(f"{b}.ffn_down.weight", WIDTH, FFN)
        add(f"{b}.ffn_down.bias", WIDTH, value=0.0)
    add("mm.0.weight", n_embd, WIDTH)
    add("mm.0.bias", n_embd, value=0.0)
    add("mm.2.weight", n_embd, n_embd)
    add("mm.2.bias", n_embd, value=0.0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
