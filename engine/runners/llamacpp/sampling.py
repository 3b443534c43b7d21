"""A chat's llama.cpp sampler chain: penalties -> top-k -> top-p -> min-p -> temperature -> draw; one per slot.

The same order as the transformers runner's sampler (engine/runners/hf/sampling.py), so a
chat's settings mean the same on both backends.
"""

from __future__ import annotations

import ctypes

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
    if penalized(params):
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


def draw_alone(chain: llama_cpp.llama_sampler_p, token: int) -> None:
    """The chain draws `token` from a candidate list of it alone, and takes it in: its random state and
    penalty history move as they would drawing from a row that allows only `token` (a forced token's
    row, whose logits are then never computed). llama.cpp's draw takes its random number however few the
    candidates are, so skipping the draw would change every later sample of a seeded chat
    (tests/engine/constraints/test_llamacpp.py holds the two ways to the same answer)."""
    candidate = llama_cpp.llama_token_data(token, 0.0, 0.0)
    candidates = llama_cpp.llama_token_data_array(ctypes.pointer(candidate), 1, -1, False)
    llama_cpp.llama_sampler_apply(chain, ctypes.byref(candidates))
    llama_cpp.llama_sampler_accept(chain, token)


def penalized(params: SamplingParams) -> bool:
    """Whether the chain starts with llama.cpp's penalties sampler (it then keeps a history of tokens)."""
    return params.repeat_penalty != 1.0 or bool(params.frequency_penalty or params.presence_penalty)


class SlotSamplers:
    """One chain per slot for its turn. A chain new this turn learns the prompt's last tokens once,
    so that its repeat penalty knows them as llama.cpp's own server does."""

    def __init__(self, n_vocab: int) -> None:
        self._n_vocab = n_vocab
        self._chains: dict[int, llama_cpp.llama_sampler_p] = {}
        self._fresh: set[int] = set()  # slots whose chain has not yet seen this turn's prompt

    def __contains__(self, slot: int) -> bool:
        return slot in self._chains

    def begin(self, slot: int, params: SamplingParams) -> None:
        self.free(slot)
        self._chains[slot] = sampler_chain(params, self._n_vocab)
        self._fresh.add(slot)

    def chain(self, slot: int) -> llama_cpp.llama_sampler_p:
        return self._chains[slot]

    def accept_prompt(self, slot: int, prompt: list[int]) -> None:
        """`prompt`: the slot's tokens up to the end of this step's; also those a turn found in the
        cache, so a reused prompt is penalized as a fresh one is (pictures' rows are left out)."""
        chain = self._chains.get(slot)
        if chain and slot in self._fresh:
            tokens = [token for token in prompt if token < self._n_vocab]
            for token in tokens[-PENALTY_LAST_N:]:
                llama_cpp.llama_sampler_accept(chain, token)

    def sampled(self, slot: int) -> None:
        """The slot's chain drew its turn's first token: the prompt is behind it."""
        self._fresh.discard(slot)

    def free(self, slot: int) -> None:
        chain = self._chains.pop(slot, None)
        if chain:
            llama_cpp.llama_sampler_free(chain)
        self._fresh.discard(slot)

    def close(self) -> None:
        for slot in list(self._chains):
            self.free(slot)
