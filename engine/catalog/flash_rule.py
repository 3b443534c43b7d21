"""What flash attention "auto" means for llama.cpp: the rule the runner follows and the memory estimate
counts by (without flash attention a long prompt's attention scores take a buffer of their own)."""

from __future__ import annotations

from typing import Literal

from engine.protocol import ModelConfig

FlashChoice = Literal["on", "off", "llama.cpp"]


def llamacpp_flash_attention(config: ModelConfig, weights_on_gpu: bool) -> FlashChoice:
    """Off on the CPU with an f16 cache, on with a quantized cache, llama.cpp's own choice on a GPU.

    On the CPU llama.cpp's flash-attention kernel generates more slowly after a long prompt than the
    plain one (docs/benchmarks.md), and chats spend most of their time generating; a quantized V cache
    works only with flash attention; on a GPU it is the fast kernel, so llama.cpp decides there. The
    rounding differs a little between the two kernels; the runner tests hold under both.
    """
    if config.flash_attention != "auto":
        return config.flash_attention
    if config.kv_cache_type != "f16":
        return "on"
    return "llama.cpp" if weights_on_gpu else "off"
