"""The rows of logits a llama.cpp slot samples from: its constraint's mask and its log-probabilities.

The mask is written into the context's own logits row (forbidden tokens to -inf, through numpy on
llama_get_logits_ith's buffer) just before llama_sampler_sample reads it, so the slot's sampler
chain (penalties, top-k, ..., the draw) works unchanged on what the constraint allows.

A greedy chain with no penalties is the row's first best token, and numpy finds it in 11 us where
llama_sampler_sample takes 166 us on a 152k-token vocabulary (it copies the row into a candidate
array first); under a constraint the best tokens are checked first and the mask is needed only if
they are forbidden (SlotConstraints.best). Either way the token is the one the chain would pick from
the masked row.
"""

from __future__ import annotations

import ctypes
from typing import Callable, Sequence

import llama_cpp
import numpy as np
from llguidance import LLTokenizer

from engine.constraints.slots import SlotConstraints, spare_core
from engine.protocol import SamplingParams, TokenLogprob
from engine.runners.base import SlotWork
from engine.runners.llamacpp.sampling import draw_alone, penalized
from engine.runners.llamacpp.tokenize_cache import TokenizeFunction
from engine.runners.logprobs import entry, row_stats


class SampledRows:
    def __init__(self, vocab: int, n_vocab: int, end_of_generation: Callable[[int], bool],
                 piece: Callable[[int], bytes]) -> None:
        self._vocab = vocab
        self._n_vocab = n_vocab
        self._end_of_generation = end_of_generation
        self._piece = piece
        self.constraints = SlotConstraints(self._tokenizer, n_vocab)
        self._logprobs: dict[int, int] = {}  # slot -> how many alternatives it wants
        self._argmax: set[int] = set()  # slots whose chain is greedy with no penalties: the row's argmax
        self.entries: dict[int, list[TokenLogprob]] = {}  # slot -> this step's, one per token it got
        self._masked = False  # this step samples a constrained slot from generated tokens
        self._tokenize: TokenizeFunction | None = None  # llguidance's tokenizer calls it (_tokenizer)

    def begin_turn(self, slot: int, params: SamplingParams) -> None:
        self.constraints.set(slot, params.constraint)
        if params.greedy and not penalized(params):
            self._argmax.add(slot)
        else:
            self._argmax.discard(slot)
        if params.logprobs is None:
            self._logprobs.pop(slot, None)
        else:
            self._logprobs[slot] = params.logprobs

    def start_step(self, wanted: Sequence[tuple[int, Sequence[int]]], threads: int, on_gpu: bool,
                   reads_prompt: bool) -> int:
        """Before the pass: the step's masks begin, and the threads the pass takes. The masks fill beside
        the pass where it leaves a core (or runs on the GPU); where it would take every core, first,
        unless OverlapChoice's measured times say one thread fewer for the pass with the masks beside it
        is faster."""
        constraints = self.constraints
        self._masked = not reads_prompt and any(constraints.active(slot) for slot, _ in wanted)
        beside = on_gpu or spare_core(threads)
        if self._masked and not beside:
            threads = constraints.overlap.threads(threads)
            beside = spare_core(threads)
        constraints.start_masks(wanted, concurrent=beside)
        return threads

    def end_step(self, threads: int, pass_seconds: float) -> None:
        """After the pass: its masks filled (a failure filling them raised here), its time counted."""
        self.constraints.wait_masks()
        if self._masked:
            self.constraints.overlap.record_pass(threads, pass_seconds)

    def known(self, item: SlotWork) -> bool:
        """Whether the item's draft rows sample without logits: forced tokens, where no log-probabilities
        are asked (those are the model's own odds, read from the row)."""
        return item.slot not in self._logprobs and self.constraints.forces(item.slot, item.draft)

    def sample(self, chain: llama_cpp.llama_sampler_p, context: int, slot: int, row: int, offset: int) -> int:
        """The slot's sample at batch row `row`, its `offset`-th row this step (0, then one per draft token)."""
        top = self._logprobs.get(slot)
        argmax = slot in self._argmax
        forced = self.constraints.forced_at(slot, offset) if top is None else None
        if forced is not None:  # its row has no logits (known)
            if not argmax:
                draw_alone(chain, forced)
            return forced
        if top is None and not argmax and not self.constraints.active(slot):
            return int(llama_cpp.llama_sampler_sample(chain, context, row))
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(context, row), shape=(self._n_vocab,))
        stats = row_stats(logits, top) if top is not None else None
        if argmax:
            token = self.constraints.best(slot, offset, logits)
        else:
            self.constraints.forbid(slot, offset, logits)
            token = int(llama_cpp.llama_sampler_sample(chain, context, row))
        if stats is not None:
            self.entries.setdefault(slot, []).append(entry(stats, token, float(logits[token]), self._piece))
        return token

    def _tokenizer(self) -> LLTokenizer:
        self._tokenize = TokenizeFunction(self._vocab)  # kept as long as the tokenizer built with it
        return llguidance_tokenizer(self._vocab, self._n_vocab, self._end_of_generation, self._tokenize)


def llguidance_tokenizer(vocab: int, n_vocab: int, end_of_generation: Callable[[int], bool],
                         tokenize: TokenizeFunction) -> LLTokenizer:
    """llguidance's view of the GGUF's vocabulary, as its llguidance.llamacpp adapter builds it (that one
    calls a deprecated llama.cpp function once per token): each token's bytes, special tokens marked
    with a leading 0xff so that no grammar writes them as text, and llama.cpp's own tokenizer (remembered
    where it is slow: tokenize_cache.py; `tokenize` must outlive the tokenizer)."""
    ends = [token for token in range(n_vocab) if end_of_generation(token)]
    pieces = [_marked_piece(vocab, token) for token in range(n_vocab)]
    return LLTokenizer.from_llamacpp(tokens=pieces, vocab_ptr=vocab, tokenize_fptr=tokenize.address,  # type: ignore[attr-defined]
                                     eos_token=ends, slices=None)


def _marked_piece(vocab: int, token: int) -> bytes:
    piece = _special_piece(vocab, token)
    return b"\xff" + piece if is_special(vocab, token, piece) else piece


def _special_piece(vocab: int, token: int) -> bytes:
    buffer = ctypes.create_string_buffer(256)
    length = llama_cpp.llama_token_to_piece(vocab, token, buffer, len(buffer), 0, True)
    if length < 0:
        buffer = ctypes.create_string_buffer(-length)
        length = llama_cpp.llama_token_to_piece(vocab, token, buffer, len(buffer), 0, True)
    return buffer.raw[: max(length, 0)]


def is_special(vocab: int, token: int, piece: bytes | None = None) -> bool:
    """Whether llguidance's view of the vocabulary keeps `token` out of text: control tokens, and
    user-defined ones written like markers (`<tool_call>`, `<|channel|>`): a grammar names these by id."""
    attributes = llama_cpp.llama_vocab_get_attr(vocab, token)
    if attributes & llama_cpp.LLAMA_TOKEN_ATTR_CONTROL:
        return True
    if not attributes & llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED:
        return False
    piece = _special_piece(vocab, token) if piece is None else piece
    return piece[:1] == b"<" and piece[-1:] == b">"
