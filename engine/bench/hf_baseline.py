"""transformers' own generation speed: the baselines `python -m engine.bench --backend hf` compares against.

`generate_tokens_per_second`: `model.generate`, one request at a time, greedy,
every request forced to `max_new_tokens` (min_new_tokens), the default dynamic
cache (or `cache_implementation="static"`, which transformers compiles on a
GPU). `generate_batch_tokens_per_second`: `model.generate_batch` (transformers'
continuous batching, paged attention) over all requests at once, with its KV
pool sized to the requests instead of the default ~90% of free GPU memory.
Both warm up with one full call first: a GPU's first call is several times slower.
`measure_baselines` loads the model exactly as the HF runner does (same dtype,
attention, quantization) and returns the figures under the bench's JSON keys.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from engine.protocol import ChatMessage, ModelConfig

PAGE_SIZE = 256  # tokens per page of generate_batch's paged KV cache


@dataclass(frozen=True)
class BaselineResult:
    tokens_per_second: float
    generated_tokens: int
    seconds: float


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _generate_one(
    model: Any, prompt: Sequence[int], max_new_tokens: int, pad_token_id: int, cache: str | None = None
) -> int:
    ids = torch.tensor([list(prompt)], dtype=torch.long, device=model.device)
    extra = {"cache_implementation": cache} if cache else {}
    out = model.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=max_new_tokens,
        min_new_tokens=max_new_tokens,
        do_sample=False,
        pad_token_id=pad_token_id,
        **extra,
    )
    return int(out.shape[1] - ids.shape[1])


def generate_tokens_per_second(
    model: Any, prompts: Sequence[Sequence[int]], max_new_tokens: int, warmup: bool = True, cache: str | None = None
) -> BaselineResult:
    """Single-request `generate` speed, summed over the prompts run one after another."""
    pad = _pad_token_id(model)
    with torch.inference_mode():
        if warmup:
            _generate_one(model, prompts[0], max_new_tokens, pad, cache)
        _synchronize(model.device)
        start, generated = time.perf_counter(), 0
        for prompt in prompts:
            generated += _generate_one(model, prompt, max_new_tokens, pad, cache)
        _synchronize(model.device)
    seconds = time.perf_counter() - start
    return BaselineResult(generated / seconds, generated, seconds)


def generate_batch_tokens_per_second(
    model: Any, prompts: Sequence[Sequence[int]], max_new_tokens: int, warmup: bool = True
) -> BaselineResult:
    """`generate_batch` over all prompts at once; counts the tokens it actually produced."""
    from transformers import GenerationConfig
    from transformers.generation.configuration_utils import ContinuousBatchingConfig

    inputs = [list(p) for p in prompts]
    pages = sum(-(-(len(p) + max_new_tokens) // PAGE_SIZE) for p in inputs) + len(inputs)
    sizes: dict[str, Any] = {_page_size_name(ContinuousBatchingConfig): PAGE_SIZE, "num_blocks": pages}
    batching = ContinuousBatchingConfig(**sizes)
    generation = GenerationConfig(
        max_new_tokens=max_new_tokens,
        do_sample=False,
        pad_token_id=_pad_token_id(model),
        eos_token_id=_eos_token_id(model),
    )
    # no inference_mode here: transformers 5.17 updates its cache tensors from a thread of its own,
    # which may not touch inference tensors made on this one (it sets up no_grad itself)
    with torch.no_grad():
        if warmup:
            model.generate_batch(inputs=inputs, generation_config=generation, continuous_batching_config=batching)
        _synchronize(model.device)
        start = time.perf_counter()
        outputs = model.generate_batch(inputs=inputs, generation_config=generation, continuous_batching_config=batching)
        _synchronize(model.device)
    seconds = time.perf_counter() - start
    generated = sum(len(output.generated_tokens) for output in outputs.values())
    return BaselineResult(generated / seconds, generated, seconds)


def _page_size_name(config_class: Any) -> str:
    """transformers 5.24 calls a KV page `page_size`; 5.17 (the GPU machine's) `block_size`."""
    import inspect

    return "page_size" if "page_size" in inspect.signature(config_class).parameters else "block_size"


def _pad_token_id(model: Any) -> int:
    config = model.generation_config
    for value in (config.pad_token_id, config.eos_token_id, 0):
        if isinstance(value, (list, tuple)):
            value = value[0] if value else None
        if isinstance(value, int):
            return value
    return 0


def _eos_token_id(model: Any) -> Any:
    return model.generation_config.eos_token_id


def measure_baselines(
    config: ModelConfig, conversations: Sequence[Sequence[ChatMessage]], max_new_tokens: int
) -> dict[str, float]:
    """{"baseline_generate_tok_s": ..., "baseline_generate_batch_tok_s": ... (more than one conversation)}.

    `generate` runs the first conversation alone (one request); `generate_batch`
    runs all of them. Call it when the engine has released its model: it loads
    its own copy and frees it before returning.
    """
    import gc

    from engine.chat_template import render_chat
    from engine.runners.hf.text import chat_template, encode_prompt, tokenizer_adds_bos
    from engine.runners.hf.load import load

    loaded = load(config, lambda fraction, message: None, lambda: False)
    tokenizer, model = loaded.tokenizer, loaded.model
    bos_wanted = tokenizer_adds_bos(tokenizer)
    template, bos, eos = chat_template(tokenizer), tokenizer.bos_token or "", tokenizer.eos_token or ""
    prompts = [encode_prompt(tokenizer, render_chat(template, c, bos, eos), bos_wanted) for c in conversations]
    try:
        single = generate_tokens_per_second(model, prompts[:1], max_new_tokens)
        result = {"baseline_generate_tok_s": single.tokens_per_second}
        if len(prompts) > 1:
            batch = generate_batch_tokens_per_second(model, prompts, max_new_tokens)
            result["baseline_generate_batch_tok_s"] = batch.tokens_per_second
        return result
    finally:
        loaded.model = model = None
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
