"""A chat's llama.cpp sampler chain: penalties -> top-k -> top-p -> min-p -> temperature -> draw.

The same order as the transformers runner's sampler (engine/runners/hf/sampling.py), so a
chat's settings mean the same on both backends.
"""

from __future__ import annotations

import llama_cpp

from engine.protocol import SamplingParams
from engine.runners.base import PENALTY_LAST_N


def sampler_chain(params: SamplingParams, n_vocab: int) -> llama_cpp.llama_sampler_p:
    """A new chain (the caller frees it with llama_sampler_free); it owns the samplers added to it."""
    chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    for sampler in _parts(params, n_vocab):
        llama_cpp.llama_sampler_chain_add(chain, sampler)
    return chain


def _parts(params: SamplingParams, n_vocab: int) -> list[int]:
    # Penalties first, also at temperature 0, as llama-server and OpenAI's API do (and the
    # transformers runner): greedy picks the best token of the penalized logits.
    parts = []
    if params.repeat_penalty != 1.0 or params.frequency_penalty or params.presence_penalty:
        parts.append(llama_cpp.llama_sampler_init_penalties(
            n_vocab, PENALTY_LAST_N, params.repeat_penalty, params.frequency_penalty, params.presence_penalty))
    if params.greedy:
        return [*parts, llama_cpp.llama_sampler_init_greedy()]
    seed = llama_cpp.LLAMA_DEFAULT_SEED if params.seed is None else params.seed & 0xFFFFFFFF
    return parts + [
        llama_cpp.llama_sampler_init_top_k(params.top_k),
        llama_cpp.llama_sampler_init_top_p(params.top_p, 1),
        llama_cpp.llama_sampler_init_min_p(params.min_p, 1),
        llama_cpp.llama_sampler_init_temp(params.temperature),
        llama_cpp.llama_sampler_init_dist(seed),  # LLAMA_DEFAULT_SEED: llama.cpp picks one
    ]
