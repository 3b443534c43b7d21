"""A draft model beside the llama.cpp runner's model: a small model of the same vocabulary guesses the next
tokens of every drafting chat, and the target checks them in its one step (engine/speculative.py, source
"draft"), as llama-server's `--model-draft` does.

The draft model has a context of its own with one cache stream per slot, like the target's
(params.context_params), and keeps a record of the tokens each slot's stream holds. A call drafts for
several chats at once: each stream is brought up to its chat's tokens (its cache kept up to the longest
common prefix, as a new turn keeps the target's), then every round is ONE llama_decode of all the chats
still drafting, one token each. A chat's draft is its draft model's likeliest token at each position
(greedy): a draft that is one fixed token is what the target's verification (runner._sample_and_verify)
treats exactly, so the answer follows the target's own distribution whatever the draft model says
(engine/runners/verify.py). A chat stops drafting at an end-of-generation token, and after its first token
where the draft model is less sure than DRAFT_MIN_PROBABILITY (llama-server's --draft-p-min): the first
token is always drafted, so the odds of the source go on being learned.

What one drafted token costs is measured here (seconds per token, rounds of every size together) and
weighed against the target's steps by the scheduler (scheduling/plan.py); before the first call, the
weights' size over the target's stands in (decoding one token reads every weight once).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import llama_cpp
import numpy as np

from engine.protocol import ModelConfig
from engine.runners.base import LoadCancelled, Progress, RunnerError
from engine.runners.draft_feed import Feed, Want, drafting, in_chunks, kept_prefix, reads_prompt
from engine.runners.llamacpp.batch import free_handles, put_tokens
from engine.runners.llamacpp.draft_vocab import vocabulary_problem
from engine.runners.llamacpp.info import kv_cache_bytes
from engine.runners.llamacpp.load import check_file, create_context, load_model
from engine.tuning import DRAFT_MIN_PROBABILITY, DRAFT_TIMING_MEMORY



class DraftModel:
    """The draft model's weights, context and batch, and what each slot's cache stream holds."""

    def __init__(self, model: int, context: int, slots: int, capacity: int, target_vocab_size: int,
                 size_ratio: float, memory_bytes: int, name: str) -> None:
        self._model: int | None = model
        self._context: int | None = context
        self._batch: llama_cpp.llama_batch | None = llama_cpp.llama_batch_init(capacity, 0, 1)
        self._capacity = capacity
        self._memory = llama_cpp.llama_get_memory(context)
        # A draft model with more padding rows than the target never proposes an id the target lacks.
        self._n_vocab = min(int(llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))),
                            target_vocab_size)
        self._cached: list[list[int]] = [[] for _ in range(slots)]
        self._threads = 0
        self.name = name
        self.size_ratio = size_ratio  # the draft's weights over the target's: a token's cost before any is timed
        self.memory_bytes = memory_bytes  # its weights and cache, besides the target's
        self.seconds_per_token: float | None = None  # measured, recent calls weighing most
        self.min_probability = DRAFT_MIN_PROBABILITY  # a draft stops after a token the draft model is less sure of
        self.rounds = 0  # llama_decode calls that drafted (each for every chat still drafting): for tests
        self.busy_seconds = 0.0  # time spent drafting, in all: the benchmark's share of the draft model

    @classmethod
    def open(cls, config: ModelConfig, target: int, context_length: int, weights_on_gpu: bool, progress: Progress,
             cancelled: Callable[[], bool]) -> DraftModel:
        """The draft model config.draft_model, checked against the target model's vocabulary; RunnerError
        says why one cannot serve."""
        assert config.draft_model
        path = check_file(config.draft_model)
        draft_config = dataclasses.replace(config, path=str(path), draft_model=None)
        progress(1.0, f"Loading the draft model {path.name}")
        model = load_model(path, draft_config, lambda fraction, what: None, cancelled)
        try:
            target_vocab = llama_cpp.llama_model_get_vocab(target)
            problem = vocabulary_problem(target_vocab, llama_cpp.llama_model_get_vocab(model),
                                         Path(config.path).name, path.name)
            if problem:
                raise RunnerError(problem)
            if cancelled():
                raise LoadCancelled(f"Loading the draft model {path.name} was cancelled.")
            context = create_context(model, path, draft_config, context_length, weights_on_gpu)
        except BaseException:
            llama_cpp.llama_model_free(model)
            raise
        weights = int(llama_cpp.llama_model_size(model))
        cache = kv_cache_bytes(model, int(llama_cpp.llama_n_ctx(context)), config.kv_cache_type)
        return cls(model, context, config.slots, int(llama_cpp.llama_n_batch(context)),
                   int(llama_cpp.llama_vocab_n_tokens(target_vocab)),
                   weights / max(int(llama_cpp.llama_model_size(target)), 1), weights + cache, path.name)

    def use_threads(self, threads: int) -> None:
        """The target's generation threads for the next calls (the two never run at once)."""
        if self._context is not None and threads != self._threads:
            llama_cpp.llama_set_n_threads(self._context, threads, threads)
            self._threads = threads

    def draft(self, wants: Sequence[Want], is_end: Callable[[int], bool]) -> list[list[int]]:
        """Each want's guessed next tokens (up to its count; fewer where the draft model stops), made in one
        batched round per position over every chat."""
        if self._context is None or self._batch is None:
            raise RunnerError("The draft model was closed.")
        drafts: list[list[int]] = [[] for _ in wants]
        going = drafting(wants, self._n_vocab)
        if not going:
            return drafts
        started = time.perf_counter()
        read_prompt = reads_prompt(wants, going, self._cached)
        rows = self._catch_up([wants[index] for index in going])
        while going:
            feeding = []
            for index, row in zip(going, rows):
                token, probability = self._choice(row)
                if is_end(token):
                    continue
                drafts[index].append(token)
                if len(drafts[index]) < wants[index][2] and probability >= self.min_probability:
                    feeding.append(index)
            going = feeding
            if going:
                rows = self._decode([(wants[index][0], [drafts[index][-1]]) for index in going])
        seconds = time.perf_counter() - started
        self.busy_seconds += seconds
        self._time(seconds, sum(len(draft) for draft in drafts), read_prompt)
        return drafts

    def read(self, slot: int, tokens: Sequence[int]) -> None:
        """Bring the slot's stream up to `tokens` (a prompt the model is reading this step), so that its first
        draft reads only the tokens after it."""
        if self._context is not None and tokens and max(tokens) < self._n_vocab:
            self._feed([(slot, tokens)], logits=False)

    def _catch_up(self, wants: list[Want]) -> list[int]:
        """Each chat's stream holds its tokens but the last, which is fed now: its logits give the first
        guess."""
        rows = self._feed([(slot, tokens) for slot, tokens, _ in wants], logits=True)
        return [rows[slot] for slot, _, _ in wants]

    def _feed(self, wants: list[tuple[int, Sequence[int]]], logits: bool) -> dict[int, int]:
        """Each stream cut back to its longest common prefix with its tokens (all but the last where `logits`
        asks for the last one's row) and fed the rest, in chunks of the batch; the row of each last token."""
        pending: list[Feed] = []
        for slot, tokens in wants:
            cached = self._cached[slot]
            keep = kept_prefix(cached, tokens, keep_last=logits)
            if keep < len(cached):
                llama_cpp.llama_memory_seq_rm(self._memory, slot, keep, -1)
                del cached[keep:]
            if keep < len(tokens):
                pending.append((slot, list(tokens[keep:])))
        rows: dict[int, int] = {}
        for chunk, ending in in_chunks(pending, self._capacity):
            for (slot, _), row in zip(chunk, self._decode(chunk, ending if logits else set())):
                if slot in ending:
                    rows[slot] = row
        return rows

    def _decode(self, feeds: list[tuple[int, list[int]]], wants_logits: set[int] | None = None) -> list[int]:
        """One llama_decode of each slot's tokens, after what its stream holds; the batch row of each one's
        last token (logits kept only for the slots in `wants_logits`, default every slot)."""
        assert self._batch is not None and self._context is not None
        index, rows = 0, []
        logits = self._batch.logits
        for slot, tokens in feeds:
            index = put_tokens(self._batch, index, tokens, len(self._cached[slot]), slot)
            self._cached[slot].extend(tokens)
            rows.append(index - 1)
            if wants_logits is None or slot in wants_logits:
                logits[index - 1] = 1
        self._batch.n_tokens = index
        result = llama_cpp.llama_decode(self._context, self._batch)
        self.rounds += 1
        if result != 0:
            for slot, _ in feeds:  # what the failed pass left in the streams is unknown: read them again
                self.forget(slot)
            word = "has no room left" if result == 1 else f"failed (error {result})"
            raise RunnerError(f"The draft model {self.name} {word} while drafting.")
        return rows

    def _choice(self, row: int) -> tuple[int, float]:
        """The draft model's likeliest token at a batch row, and its probability."""
        assert self._context is not None
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self._context, row), shape=(self._n_vocab,))
        token = int(np.argmax(logits))
        return token, float(1.0 / np.exp(logits - logits[token]).sum())

    def _time(self, seconds: float, drafted: int, read_prompt: bool) -> None:
        """A call's seconds per drafted token, into the running figure; a call that read a prompt is not a
        drafting call's usual cost (the prompt is read once a turn)."""
        if drafted == 0 or read_prompt:
            return
        per_token = seconds / drafted
        last = self.seconds_per_token
        memory = DRAFT_TIMING_MEMORY
        self.seconds_per_token = per_token if last is None else memory * last + (1 - memory) * per_token

    def forget(self, slot: int) -> None:
        if self._context is not None:
            llama_cpp.llama_memory_seq_rm(self._memory, slot, -1, -1)
        self._cached[slot].clear()

    def close(self) -> None:
        free_handles(self._batch, self._context, self._model)
        self._batch = self._context = self._model = None
