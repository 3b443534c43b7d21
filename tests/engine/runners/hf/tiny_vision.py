"""A tiny LLaVA folder built in code: a 2-layer CLIP tower on 32x32 pictures, a projector and the tiny Llama.

The folder is what a real LLaVA checkpoint holds (config.json, model.safetensors, processor_config.json,
the tokenizer with its <image> token), so the runner loads it through AutoProcessor and
AutoModelForImageTextToText as it would a downloaded one. Weights come from a fixed seed.
"""

from __future__ import annotations

import io
from pathlib import Path

from tests.engine.runners.hf.tiny_hf import build_tokenizer

IMAGE_TOKENS = 16  # (32 / 8) ** 2 patches; the "default" strategy drops CLIP's class token


def build_tiny_llava(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        GenerationConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(folder, extra_special=["<image>"])
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    text = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, initializer_range=0.2,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=eos, pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                              image_size=32, patch_size=8, projection_dim=32)
    config = LlavaConfig(vision_config=vision, text_config=text, image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
                         vision_feature_layer=-1, vision_feature_select_strategy="default")
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config).to(torch.float32).eval()
    with torch.no_grad():  # a wide projector: pictures move the logits well beyond rounding
        for parameter in model.model.multi_modal_projector.parameters():
            parameter.mul_(4.0)
    model.generation_config = GenerationConfig(bos_token_id=text.bos_token_id, eos_token_id=[eos],
                                               pad_token_id=text.pad_token_id)
    model.save_pretrained(folder, safe_serialization=True)
    images = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    processor = LlavaProcessor(image_processor=images, tokenizer=tokenizer, patch_size=8,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1,
                               chat_template=tokenizer.chat_template)
    processor.save_pretrained(folder)
    return folder


def picture(colour: tuple[int, int, int], size: tuple[int, int] = (40, 30), kind: str = "PNG") -> bytes:
    """A picture's file bytes: one colour with a white square in a corner (so it is not uniform)."""
    from PIL import Image

    image = Image.new("RGB", size, colour)
    image.paste((255, 255, 255), (0, 0, size[0] // 3, size[1] // 3))
    out = io.BytesIO()
    image.save(out, format=kind)
    return out.getvalue()
