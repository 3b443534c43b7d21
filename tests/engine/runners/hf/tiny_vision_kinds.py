"""Tiny random-weight folders of the image-text kinds the transformers runner handles, built in code.

Each is what a downloaded checkpoint holds (config.json, model.safetensors, the processor's and the
tokenizer's files), with each kind's own processor (Qwen2-VL's min/max pixels and merged patch grid,
Gemma 3's fixed square and <start_of_image> run, Idefics3's tiles plus a global view, LLaVA-NeXT's
any-resolution crops), a 2-layer language model and a 1- or 2-layer vision tower. Weights come from a
fixed seed; the projector is widened so that a picture moves the logits well beyond rounding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from tests.engine.runners.hf.tiny_hf import build_tokenizer

TEXT: dict[str, Any] = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=512, initializer_range=0.2, tie_word_embeddings=False)


def _tokenizer(folder: Path, specials: list[str], named: dict[str, str] | None = None) -> Any:
    from transformers import PreTrainedTokenizerFast

    tokenizer = build_tokenizer(folder, extra_special=specials)
    if named:  # the attributes some processors read (tokenizer.boi_token ...), saved with the tokenizer
        tokenizer = PreTrainedTokenizerFast.from_pretrained(folder, extra_special_tokens=named)
        tokenizer.save_pretrained(folder)
    return tokenizer


def _ids(tokenizer: Any) -> dict[str, int]:
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    return dict(bos_token_id=tokenizer.bos_token_id, eos_token_id=eos, pad_token_id=tokenizer.pad_token_id)


def _save(model: Any, folder: Path, tokenizer: Any, processor: Any, seed_scale: float = 4.0,
          projector: Callable[[Any], Any] | None = None) -> Path:
    import torch
    from transformers import GenerationConfig

    with torch.no_grad():
        if projector is not None:
            for parameter in projector(model).parameters():
                if parameter.abs().max() == 0:  # Gemma 3 starts its projection at zero
                    parameter.normal_(0.0, 0.2)
                parameter.mul_(seed_scale)
    ids = _ids(tokenizer)
    model.generation_config = GenerationConfig(bos_token_id=ids["bos_token_id"], eos_token_id=[ids["eos_token_id"]],
                                               pad_token_id=ids["pad_token_id"])
    model.save_pretrained(folder, safe_serialization=True)
    processor.save_pretrained(folder)
    return folder


def build_qwen2_vl(folder: Path, seed: int = 0, version: str = "2") -> Path:
    import torch
    from transformers import Qwen2VLImageProcessor

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(folder, ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"])
    token = tokenizer.convert_tokens_to_ids
    text = dict(TEXT, vocab_size=len(tokenizer), rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                                    "mrope_section": [2, 3, 3]}, **_ids(tokenizer))
    special = dict(image_token_id=token("<|image_pad|>"), video_token_id=token("<|video_pad|>"),
                   vision_start_token_id=token("<|vision_start|>"), vision_end_token_id=token("<|vision_end|>"))
    images = Qwen2VLImageProcessor(min_pixels=8 * 8, max_pixels=48 * 48, patch_size=4, temporal_patch_size=2,
                                   merge_size=2)
    torch.manual_seed(seed)
    if version == "2":
        from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor

        vision = dict(depth=2, embed_dim=32, hidden_size=64, num_heads=2, mlp_ratio=2, patch_size=4,
                      spatial_merge_size=2, temporal_patch_size=2)
        config = Qwen2VLConfig(text_config=text, vision_config=vision, **special)
        model = Qwen2VLForConditionalGeneration(config).to(torch.float32).eval()
        processor: Any = Qwen2VLProcessor(image_processor=images, tokenizer=tokenizer,
                                          video_processor=_video(version), chat_template=tokenizer.chat_template)
    else:
        from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor

        vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, patch_size=4,
                      spatial_merge_size=2, temporal_patch_size=2, window_size=16, fullatt_block_indexes=[1])
        config = Qwen2_5_VLConfig(text_config=text, vision_config=vision, **special)
        model = Qwen2_5_VLForConditionalGeneration(config).to(torch.float32).eval()
        processor = Qwen2_5_VLProcessor(image_processor=images, tokenizer=tokenizer,
                                        video_processor=_video(version), chat_template=tokenizer.chat_template)
    return _save(model, folder, tokenizer, processor, projector=lambda m: m.model.visual.merger)


def _video(version: str) -> Any:
    from transformers import Qwen2VLVideoProcessor

    return Qwen2VLVideoProcessor(patch_size=4, temporal_patch_size=2, merge_size=2)


def build_gemma3(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import (
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3ImageProcessor,
        Gemma3Processor,
        Gemma3TextConfig,
        SiglipVisionConfig,
    )

    folder.mkdir(parents=True, exist_ok=True)
    named = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
    tokenizer = _tokenizer(folder, list(named.values()), named)
    token = tokenizer.convert_tokens_to_ids
    text = Gemma3TextConfig(**dict(TEXT, vocab_size=len(tokenizer), head_dim=16, query_pre_attn_scalar=16,
                                   sliding_window=512, layer_types=["sliding_attention", "full_attention"],
                                   **_ids(tokenizer)))
    vision = SiglipVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                                image_size=32, patch_size=8)
    config = Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=16,
                          boi_token_index=token("<start_of_image>"), eoi_token_index=token("<end_of_image>"),
                          image_token_index=token("<image_soft_token>"))
    torch.manual_seed(seed)
    model = Gemma3ForConditionalGeneration(config).to(torch.float32).eval()
    images = Gemma3ImageProcessor(size={"height": 32, "width": 32})
    processor = Gemma3Processor(image_processor=images, tokenizer=tokenizer, image_seq_length=16,
                                chat_template=tokenizer.chat_template)
    return _save(model, folder, tokenizer, processor, projector=lambda m: m.model.multi_modal_projector)


def build_idefics3(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessor,
        Idefics3Processor,
        Idefics3VisionConfig,
        LlamaConfig,
    )

    folder.mkdir(parents=True, exist_ok=True)
    tiles = [f"<row_{i}_col_{j}>" for i in range(1, 4) for j in range(1, 4)]
    tokenizer = _tokenizer(folder, ["<image>", "<fake_token_around_image>", "<global-img>", "<end_of_utterance>",
                                    *tiles])
    text = LlamaConfig(**dict(TEXT, vocab_size=len(tokenizer), **_ids(tokenizer)))
    vision = Idefics3VisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                                  image_size=32, patch_size=8)
    config = Idefics3Config(text_config=text, vision_config=vision, scale_factor=2,
                            image_token_id=tokenizer.convert_tokens_to_ids("<image>"))
    torch.manual_seed(seed)
    model = Idefics3ForConditionalGeneration(config).to(torch.float32).eval()
    images = Idefics3ImageProcessor(size={"longest_edge": 64}, max_image_size={"longest_edge": 32})
    processor = Idefics3Processor(image_processor=images, tokenizer=tokenizer, image_seq_len=4,
                                  chat_template=tokenizer.chat_template)
    return _save(model, folder, tokenizer, processor, projector=lambda m: m.model.connector)


def build_smolvlm(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import (
        LlamaConfig,
        SmolVLMConfig,
        SmolVLMForConditionalGeneration,
        SmolVLMImageProcessor,
        SmolVLMProcessor,
        SmolVLMVideoProcessor,
        SmolVLMVisionConfig,
    )

    folder.mkdir(parents=True, exist_ok=True)
    tiles = [f"<row_{i}_col_{j}>" for i in range(1, 4) for j in range(1, 4)]
    tokenizer = _tokenizer(folder, ["<image>", "<fake_token_around_image>", "<global-img>", "<end_of_utterance>",
                                    "<video>", *tiles])
    text = LlamaConfig(**dict(TEXT, vocab_size=len(tokenizer), **_ids(tokenizer)))
    vision = SmolVLMVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                                 image_size=32, patch_size=8)
    config = SmolVLMConfig(text_config=text, vision_config=vision, scale_factor=2,
                           image_token_id=tokenizer.convert_tokens_to_ids("<image>"))
    torch.manual_seed(seed)
    model = SmolVLMForConditionalGeneration(config).to(torch.float32).eval()
    images = SmolVLMImageProcessor(size={"longest_edge": 64}, max_image_size={"longest_edge": 32})
    video = SmolVLMVideoProcessor(size={"longest_edge": 64}, max_image_size={"longest_edge": 32})
    processor = SmolVLMProcessor(image_processor=images, tokenizer=tokenizer, video_processor=video, image_seq_len=4,
                                 chat_template=tokenizer.chat_template)
    return _save(model, folder, tokenizer, processor, projector=lambda m: m.model.connector)


def build_llava_next(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import (
        CLIPVisionConfig,
        LlamaConfig,
        LlavaNextConfig,
        LlavaNextForConditionalGeneration,
        LlavaNextImageProcessor,
        LlavaNextProcessor,
    )

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(folder, ["<image>"])
    text = LlamaConfig(**dict(TEXT, vocab_size=len(tokenizer), **_ids(tokenizer)))
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                              image_size=32, patch_size=8, projection_dim=32)
    pinpoints = [[32, 64], [64, 32], [64, 64]]
    config = LlavaNextConfig(vision_config=vision, text_config=text, image_grid_pinpoints=pinpoints,
                             image_token_id=tokenizer.convert_tokens_to_ids("<image>"), vision_feature_layer=-1,
                             vision_feature_select_strategy="default")
    torch.manual_seed(seed)
    model = LlavaNextForConditionalGeneration(config).to(torch.float32).eval()
    images = LlavaNextImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32},
                                     image_grid_pinpoints=pinpoints)
    processor = LlavaNextProcessor(image_processor=images, tokenizer=tokenizer, patch_size=8,
                                   vision_feature_select_strategy="default", num_additional_image_tokens=1,
                                   chat_template=tokenizer.chat_template)
    return _save(model, folder, tokenizer, processor, projector=lambda m: m.model.multi_modal_projector)


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "qwen2_vl": build_qwen2_vl,
    "qwen2_5_vl": lambda folder: build_qwen2_vl(folder, version="2.5"),
    "gemma3": build_gemma3,
    "idefics3": build_idefics3,
    "smolvlm": build_smolvlm,
    "llava_next": build_llava_next,
}
