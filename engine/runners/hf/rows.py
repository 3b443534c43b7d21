"""The rows of logits a transformers slot samples from: its constraint's mask and its log-probabilities.

All of a step's rows are prepared before any is sampled: log-probabilities from the model's own
row, then the constraint's mask (forbidden tokens to -inf, in place). A draft row's mask already
assumes the draft before it was accepted, and a row past the first rejection is never sampled, so
masking them all up front is exact; and the greedy fast path (one argmax for all chats) stays.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from llguidance import LLTokenizer

from engine.constraints.slots import SlotConstraints, spare_core
from engine.protocol import SamplingParams, TokenLogprob
from engine.runners.base import SlotWork
from engine.runners.logprobs import RowStats, entry, row_stats


class SampledRows:
    def __init__(self, tokenizer: Any, n_vocab: int, end_of_generation: set[int]) -> None:
        self._hf_tokenizer = tokenizer
        self._end_of_generation = end_of_generation
        self.n_vocab = n_vocab
        self.constraints = SlotConstraints(self._tokenizer, n_vocab)
        self._logprobs: dict[int, int] = {}
        self._stats: dict[int, list[RowStats]] = {}
        self._pieces: dict[int, bytes] = {}
        self.entries: dict[int, list[TokenLogprob]] = {}

    def begin_turn(self, slot: int, params: SamplingParams) -> None:
        self.constraints.set(slot, params.constraint)
        if params.logprobs is None:
            self._logprobs.pop(slot, None)
        else:
            self._logprobs[slot] = params.logprobs

    def start(self, work: Sequence[SlotWork], on_cpu: bool) -> None:
        """Before the forward pass: this step's masks begin to fill (beside it where a core is spare)."""
        self.entries, self._stats = {}, {}
        self.constraints.start_masks([(item.slot, item.draft) for item in work if item.sample],
                                     concurrent=not on_cpu or spare_core(torch.get_num_threads()))

    def prepare(self, logits: torch.Tensor, sampling: Sequence[SlotWork]) -> None:
        """Every sampled row of the step: its statistics where asked, then its mask."""
        self.constraints.wait_masks()
        if not self._logprobs and not self.constraints.any_active():
            return
        first = 0
        for item in sampling:
            top = self._logprobs.get(item.slot)
            for offset in range(1 + len(item.draft)):
                self._prepare_row(logits[first + offset], item.slot, offset, top)
            first += 1 + len(item.draft)

    @torch.inference_mode()  # the logits are the forward pass's inference tensors
    def _prepare_row(self, row: torch.Tensor, slot: int, offset: int, top: int | None) -> None:
        if top is not None:
            self._stats.setdefault(slot, []).append(row_stats(row.float().cpu().numpy(), top))
        allowed = self.constraints.allowed(slot, offset)
        if allowed is not None:
            row.masked_fill_(~torch.from_numpy(allowed).to(row.device), float("-inf"))

    def finish(self, slot: int, tokens: list[int], rows: torch.Tensor) -> None:
        """After sampling: the constraint takes the tokens in; their log-probabilities are written."""
        self.constraints.consume(slot, tokens, self._end_of_generation.__contains__)
        stats = self._stats.get(slot)
        if stats is not None:
            logits = [float(rows[offset, token]) for offset, token in enumerate(tokens)]
            self.entries[slot] = [entry(stats[offset], token, logits[offset], self._piece)
                                  for offset, token in enumerate(tokens)]

    def _piece(self, token: int) -> bytes:
        piece = self._pieces.get(token)
        if piece is None:
            data = self.constraints.tokenizer().decode_bytes([token])
            piece = self._pieces[token] = data[1:] if data.startswith(b"\xff") else data  # \xff marks a special token
        return piece

    def _tokenizer(self) -> LLTokenizer:
        from llguidance.hf import from_tokenizer

        return from_tokenizer(self._hf_tokenizer, n_vocab=self.n_vocab, eos_token=sorted(self._end_of_generation))

