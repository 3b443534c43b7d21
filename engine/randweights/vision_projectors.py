"""Random-weights vision projectors (mmproj GGUFs) of the families that need more than LLaVA's path.

Each has its family's projector type string, tensor names and hyper-parameter keys as llama.cpp's
clip.cpp reads them, at toy sizes (a 32-wide ViT of one or two blocks):

- "gemma3": a SigLIP ViT, an average pool of the patch grid (clip.vision.projector.scale_factor per
  side), an RMS norm and one projection; its rows are decoded with non-causal attention.
- "qwen2.5vl_merger": Qwen2.5-VL's ViT (two patch kernels, RMS norms, SiLU-gated MLP, window
  attention every other block), 2x2 patches merged into one token; M-RoPE positions in the text model.
- "qwen3vl_merger": Qwen3-VL's ViT (learned positions resized to the grid, fused qkv, GELU MLP) and
  merger, plus a deepstack merger after the first block whose features ride on each row: rows are
  (1 + deepstack) times the text model's width, as its input expects.
- "idefics3": SmolVLM's SigLIP ViT and pixel-shuffle projection; a picture is resized to twice the
  tile on its longer side and cut into tiles, each an image chunk of its own, after an overview. Its
  text model's vocabulary needs the markers libmtmd looks up (IDEFICS3_TOKENS).

Their output is noise; token counts, positions and chunk layout are the real projectors'.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

WIDTH = 32
HEADS = 2
FFN = 48  # not WIDTH: clip.cpp swaps ffn up/down where down's input width equals the embedding width
PATCH = 4
PROJECTORS = ("gemma3", "qwen2.5vl_merger", "qwen3vl_merger", "idefics3")
IDEFICS3_TOKENS = ("<fake_token_around_image>", "<global-img>",
                   *(f"<row_{row}_col_{column}>" for row in range(1, 7) for column in range(1, 7)))


def write_vision_projector(path: Path, kind: str, n_embd: int, seed: int = 0, image_size: int = 32,
                           merge: int = 2, blocks: int = 2) -> Path:
    """A projector of type `kind` whose rows are `n_embd` wide (the text model's width)."""
    import gguf

    if kind not in PROJECTORS:
        raise ValueError(f"no random {kind} projector is written here ({', '.join(PROJECTORS)})")
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), "clip")
    writer.add_bool("clip.has_vision_encoder", True)
    writer.add_string("clip.projector_type", kind)
    writer.add_bool("clip.use_silu" if kind == "qwen2.5vl_merger" else "clip.use_gelu", True)
    qwen = kind in ("qwen2.5vl_merger", "qwen3vl_merger")
    for key, value in (("image_size", image_size), ("patch_size", PATCH), ("embedding_length", WIDTH),
                       ("feed_forward_length", FFN), ("projection_dim", n_embd), ("attention.head_count", HEADS),
                       ("block_count", blocks)):
        writer.add_uint32(f"clip.vision.{key}", value)
    writer.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    writer.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    writer.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    if qwen:
        writer.add_uint32("clip.vision.spatial_merge_size", merge)
    if kind == "qwen2.5vl_merger":
        writer.add_uint32("clip.vision.n_wa_pattern", 2)  # full attention every 2nd block, windows between
    else:
        writer.add_uint32("clip.vision.projector.scale_factor", merge)
    if kind == "idefics3":  # resized so the longer side is twice a tile: 2x2 or 2x1 slices, and an overview
        writer.add_uint32("clip.vision.preproc_image_size", 2 * image_size)

    def add(name: str, *shape: int, value: float | None = None, std: float = 0.02) -> None:
        # numpy order (the ggml shape reversed)
        data = np.full(shape, value, np.float32) if value is not None else rng.normal(0, std, shape).astype(np.float32)
        writer.add_tensor(name, data)

    _vit(add, kind, image_size, blocks)
    if kind == "gemma3":
        add("mm.soft_emb_norm.weight", WIDTH, value=1.0)
        add("mm.input_projection.weight", WIDTH, n_embd, std=1.0 / np.sqrt(WIDTH))
    elif qwen:
        merged = WIDTH * merge * merge
        stages = ["mm.0", "v.deepstack.0.fc1"] if kind == "qwen3vl_merger" else ["mm.0"]
        for stage in stages:  # merged -> merged -> the text width
            add(f"{stage}.weight", merged, merged, std=1.0 / np.sqrt(merged))
            add(f"{stage}.bias", merged, value=0.0)
            last = stage.replace("mm.0", "mm.2").replace("fc1", "fc2")
            add(f"{last}.weight", n_embd, merged, std=1.0 / np.sqrt(merged))
            add(f"{last}.bias", n_embd, value=0.0)
        if kind == "qwen3vl_merger":
            add("v.deepstack.0.norm.weight", merged, value=1.0)
            add("v.deepstack.0.norm.bias", merged, value=0.0)
    else:
        add("mm.model.fc.weight", n_embd, WIDTH * merge * merge, std=1.0 / np.sqrt(WIDTH * merge * merge))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _vit(add: Callable[..., Any], kind: str, image_size: int, blocks: int) -> None:
    """The vision transformer: SigLIP's (LayerNorms with biases, learned positions, GELU MLP), Qwen2.5-VL's
    (two patch kernels, RMS norms, no positions table: 2-D rotary inside, SiLU-gated MLP) or Qwen3-VL's
    (two patch kernels with a bias, learned positions and 2-D rotary, fused qkv, LayerNorms, GELU MLP)."""
    qwen25, qwen3 = kind == "qwen2.5vl_merger", kind == "qwen3vl_merger"
    weight = 1.0 / np.sqrt(WIDTH)
    add("v.patch_embd.weight", WIDTH, 3, PATCH, PATCH, std=0.2)
    if qwen25 or qwen3:
        add("v.patch_embd.weight.1", WIDTH, 3, PATCH, PATCH, std=0.2)
    if not qwen25:
        add("v.patch_embd.bias", WIDTH, value=0.0)
        add("v.position_embd.weight", (image_size // PATCH) ** 2, WIDTH, std=0.2)
    for i in range(blocks):
        b = f"v.blk.{i}"
        roles = (("attn_qkv", 3 * WIDTH), ("attn_out", WIDTH)) if qwen3 else \
            (("attn_q", WIDTH), ("attn_k", WIDTH), ("attn_v", WIDTH), ("attn_out", WIDTH))
        for role, rows in roles:
            add(f"{b}.{role}.weight", rows, WIDTH, std=weight)
            add(f"{b}.{role}.bias", rows, value=0.0)
        for norm in ("ln1", "ln2"):
            add(f"{b}.{norm}.weight", WIDTH, value=1.0)
            if not qwen25:
                add(f"{b}.{norm}.bias", WIDTH, value=0.0)
        add(f"{b}.ffn_up.weight", FFN, WIDTH, std=weight)
        add(f"{b}.ffn_up.bias", FFN, value=0.0)
        if qwen25:
            add(f"{b}.ffn_gate.weight", FFN, WIDTH, std=weight)
            add(f"{b}.ffn_gate.bias", FFN, value=0.0)
        add(f"{b}.ffn_down.weight", WIDTH, FFN, std=1.0 / np.sqrt(FFN))
        add(f"{b}.ffn_down.bias", WIDTH, value=0.0)
    add("v.post_ln.weight", WIDTH, value=1.0)
    if not qwen25:
        add("v.post_ln.bias", WIDTH, value=0.0)
