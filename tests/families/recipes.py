"""The families: which real vocabulary and which real chat template each fixture carries.

A family's vocabulary is its release's own: llama.cpp's vocab GGUF of the family's tokenizer (its
BPE tokens and merges) with the tokens the release added or renamed at their ids, as the release's
tokenizer_config.json lists them and as llama.cpp's converter types them (`<|...|>` and the
markers the tokenizer calls special are control tokens; other added tokens, Qwen's `<think>` and
`<tool_call>`, are user-defined). Templates are the families' own, from llama.cpp's models/templates.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from tests.families import vocab
from tests.families.sources import fixture_file
from tests.families.vocab import CONTROL, USER_DEFINED, Vocabulary


@dataclass(frozen=True)
class Family:
    name: str  # fixture id, e.g. "qwen3"
    title: str  # what people call it
    template: str  # a fixture file of sources.py
    vocabulary: Callable[[], Vocabulary]
    # Output markers this vocabulary holds as single special tokens (what the fixture tests check)
    markers: tuple[str, ...]


def _qwen_added(names: tuple[str, ...], first: int = 151643) -> dict[int, tuple[str, int]]:
    def kind(text: str) -> int:
        return CONTROL if text.startswith(("<|", "<｜")) and text.endswith(("|>", "｜>")) else USER_DEFINED

    return {first + offset: (text, kind(text)) for offset, text in enumerate(names)}


QWEN25_ADDED = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
                "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
                "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
                "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>")
QWEN3_ADDED = (*QWEN25_ADDED, "<tool_response>", "</tool_response>", "<think>", "</think>")
# DeepSeek-R1-Distill-Qwen's tokenizer replaces Qwen's first added tokens with DeepSeek's (as its GGUF has them)
R1_DISTILL_ADDED = ("<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<｜begin▁of▁sentence｜>", "<|EOT|>",
                    "<think>", "</think>", *QWEN25_ADDED[7:])


@functools.cache
def _qwen_base() -> Vocabulary:
    return vocab.from_gguf(fixture_file("ggml-vocab-qwen2.gguf"))


def qwen3() -> Vocabulary:
    return _qwen_base().with_added(_qwen_added(QWEN3_ADDED), **{
        "tokenizer.ggml.eos_token_id": 151645, "tokenizer.ggml.padding_token_id": 151643,
        "tokenizer.ggml.add_bos_token": False})


def qwen25() -> Vocabulary:
    return _qwen_base().with_added(_qwen_added(QWEN25_ADDED), **{
        "tokenizer.ggml.eos_token_id": 151645, "tokenizer.ggml.padding_token_id": 151643,
        "tokenizer.ggml.add_bos_token": False})


def r1_distill_qwen() -> Vocabulary:
    base = _qwen_base()
    added = _qwen_added(R1_DISTILL_ADDED)
    return base.with_added({**added, 152063: ("[PAD152063]", vocab.UNUSED)}, **{
        "tokenizer.ggml.bos_token_id": 151646, "tokenizer.ggml.eos_token_id": 151643,
        "tokenizer.ggml.padding_token_id": 151654, "tokenizer.ggml.add_bos_token": True})


def _llama31_name(token_id: int) -> str:
    """Llama 3.1's names for ids 128000-128255 (its tokenizer_config.json): 3.0's reserved tokens
    2, 4 and 5 became the fine-tune pad, <|eom_id|> and <|python_tag|>; the rest are renumbered."""
    named = {128000: "<|begin_of_text|>", 128001: "<|end_of_text|>", 128004: "<|finetune_right_pad_id|>",
             128006: "<|start_header_id|>", 128007: "<|end_header_id|>", 128008: "<|eom_id|>",
             128009: "<|eot_id|>", 128010: "<|python_tag|>"}
    if token_id in named:
        return named[token_id]
    reserved = {128002: 0, 128003: 1, 128005: 2}.get(token_id, token_id - 128011 + 3)
    return f"<|reserved_special_token_{reserved}|>"


def llama31() -> Vocabulary:
    base = vocab.from_gguf(fixture_file("ggml-vocab-llama-bpe.gguf"))
    return base.with_added({i: (_llama31_name(i), CONTROL) for i in range(128000, 128256)}, **{
        "tokenizer.ggml.eos_token_id": 128009, "tokenizer.ggml.eom_token_id": 128008,
        "tokenizer.ggml.add_bos_token": True})


# Tekken's control tokens (ids 0-999): the first 20 as mistral-common names them, and those that the
# v11 and v13 tokenizers (Devstral, Magistral, Ministral 3) named since, at their ranks.
TEKKEN_CONTROL = ("<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
                  "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]",
                  "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]")
TEKKEN_NAMED_SINCE = {24: "[AUDIO]", 25: "[BEGIN_AUDIO]", 32: "[ARGS]", 33: "[CALL_ID]", 34: "[THINK]", 35: "[/THINK]"}


@functools.cache
def tekken() -> Vocabulary:
    """Tekken as the v11/v13 tokenizers name its control tokens (Devstral, Magistral, Ministral 3)."""
    return _tekken(TEKKEN_NAMED_SINCE)


def tekken_v3() -> Vocabulary:
    """Tekken as Mistral Nemo's v3 tokenizer has it: no [ARGS], no [THINK]."""
    return _tekken({})


def _tekken(named_since: dict[int, str]) -> Vocabulary:
    names = {i: f"<SPECIAL_{i}>" for i in range(1000)}
    names.update(enumerate(TEKKEN_CONTROL))
    names.update(named_since)
    return vocab.from_ranks(vocab.read_tekken(fixture_file("tekken_240911.json")), names, 1000, 131072, "tekken", **{
        "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.unknown_token_id": 0,
        "tokenizer.ggml.add_bos_token": True, "tokenizer.ggml.add_eos_token": False})


@functools.cache
def o200k_harmony() -> Vocabulary:
    specials = vocab.read_specials(fixture_file("o200k_harmony.special"))
    return vocab.from_ranks(vocab.read_ranked(fixture_file("o200k.vocab")), specials, 0, 201088, "gpt-4o", **{
        "tokenizer.ggml.bos_token_id": 199998, "tokenizer.ggml.eos_token_id": 200002,
        "tokenizer.ggml.padding_token_id": 199999, "tokenizer.ggml.add_bos_token": False})


def gemma4() -> Vocabulary:
    return vocab.from_gguf(fixture_file("ggml-vocab-gemma-4.gguf"))


FAMILIES = {family.name: family for family in (
    Family("qwen3", "Qwen3", "Qwen-Qwen3-0.6B.jinja", qwen3, ("<think>", "</think>", "<tool_call>", "</tool_call>")),
    Family("qwen3_coder", "Qwen3-Coder", "Qwen3-Coder.jinja", qwen3, ("<tool_call>", "</tool_call>")),
    Family("qwen2_5", "Qwen2.5", "Qwen-Qwen2.5-7B-Instruct.jinja", qwen25, ("<tool_call>", "</tool_call>")),
    Family("r1_distill", "DeepSeek-R1-Distill-Qwen", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
           r1_distill_qwen, ("<think>", "</think>")),
    Family("llama3_1", "Llama 3.1", "meta-llama-Llama-3.1-8B-Instruct.jinja", llama31, ("<|python_tag|>",)),
    Family("llama3_2", "Llama 3.2", "meta-llama-Llama-3.2-3B-Instruct.jinja", llama31, ()),
    Family("mistral_nemo", "Mistral Nemo", "mistralai-Mistral-Nemo-Instruct-2407.jinja", tekken_v3,
           ("[TOOL_CALLS]",)),
    Family("devstral", "Devstral / Mistral Small 3.2", "unsloth-mistral-Devstral-Small-2507.jinja", tekken,
           ("[TOOL_CALLS]", "[ARGS]")),
    Family("ministral_reasoning", "Ministral 3 Reasoning", "mistralai-Ministral-3-14B-Reasoning-2512.jinja", tekken,
           ("[THINK]", "[/THINK]", "[TOOL_CALLS]", "[ARGS]")),
    Family("gpt_oss", "gpt-oss", "openai-gpt-oss-120b.jinja", o200k_harmony,
           ("<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|constrain|>", "<|call|>", "<|return|>")),
    Family("gemma4", "Gemma 4", "google-gemma-4-31B-it.jinja", gemma4, ("<|tool_call>", "<tool_call|>", '<|"|>')),
)}
