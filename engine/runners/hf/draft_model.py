"""A draft model beside the transformers runner's model: a smaller model of the same vocabulary guesses the next
tokens of every drafting chat, and the model checks them in its one step (engine/speculative.py, source "draft"),
as the llama.cpp runner's draft model does (runners/llamacpp/draft_model.py).

The draft model is an HfRunner of its own: its weights, one cache row per slot (the model's slots), its packed
step. A call drafts for several chats at once: each slot's cache is cut back to the longest common prefix with
its chat's tokens and the rest read (in chunks of its batch), and every round is then ONE packed step of all the
chats still drafting, one token each. Its guess is its likeliest token, greedy: a draft that is one fixed token
per position is what the model's verification treats exactly (engine/runners/verify.py), so greedy answers are
the ones without it and sampled ones follow the model's distribution. A chat stops at an end-of-generation token
and after its first token the draft model is less sure of than DRAFT_MIN_PROBABILITY.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from engine.protocol import ModelConfig, ModelInfo
from engine.runners.base import LoadCancelled, Progress, RunnerError, SlotWork
from engine.runners.draft_feed import Feed, Want, drafting, in_chunks, kept_prefix, reads_prompt
from engine.tuning import DRAFT_MIN_PROBABILITY, DRAFT_TIMING_MEMORY


class HfRunner(Protocol):
    """What is used of runner.py's HfRunner, the model's and the draft model's (not imported: it imports this)."""

    slots: int
    batch_tokens: int
    info: ModelInfo
    tokenizer: Any
    model: Any

    def forward(self, work: Sequence[SlotWork]) -> dict[int, list[int]]: ...
    def remove_from(self, slot: int, position: int) -> bool: ...
    def clear_slot(self, slot: int) -> None: ...
    def last_logits(self, slot: int) -> np.ndarray: ...
    def kv_cache_bytes(self) -> int: ...
    def close(self) -> None: ...


Load = Callable[[ModelConfig, Progress, Callable[[], bool]], HfRunner]

# Most token ids the two vocabularies may differ by: llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE, as the llama.cpp
# runner's check (runners/llamacpp/draft_vocab.py) has it.
VOCAB_SIZE_SLACK = 128


def vocabulary_problem(model: Any, draft: Any, model_name: str, draft_name: str) -> str:
    """Why the draft model's tokenizer cannot stand for the model's, in words; "" where it can: sizes at most
    VOCAB_SIZE_SLACK apart, the same BOS and EOS, the same token at every id both have."""
    ours, theirs = _by_id(model), _by_id(draft)
    if abs(len(ours) - len(theirs)) > VOCAB_SIZE_SLACK:
        return (f"The draft model {draft_name} has {len(theirs):,} tokens and {model_name} {len(ours):,}: a draft "
                "model must share the model's vocabulary (take a smaller model of the same family).")
    for what in ("bos_token_id", "eos_token_id"):
        ids = getattr(model, what, None), getattr(draft, what, None)
        if ids[0] != ids[1]:
            return (f"The draft model {draft_name} has token {ids[1]} as its {what.split('_')[0].upper()} token and "
                    f"{model_name} token {ids[0]}: their vocabularies differ, so a draft model cannot be used with it.")
    for token in range(min(len(ours), len(theirs))):
        if ours.get(token) != theirs.get(token):
            return (f"Token {token} is {theirs.get(token)!r} in the draft model {draft_name} but {ours.get(token)!r} "
                    f"in {model_name}: their vocabularies differ, so a draft model cannot be used with it.")
    return ""


def _by_id(tokenizer: Any) -> dict[int, str]:
    return {index: token for token, index in tokenizer.get_vocab().items()}


class HfDraftModel:
    """The draft model's runner and what each of its slots holds."""

    def __init__(self, runner: HfRunner, vocabulary: int, size_ratio: float, name: str) -> None:
        self._runner: HfRunner | None = runner
        self._n_vocab = vocabulary  # ids both models have: a guess past them is never made
        self._cached: list[list[int]] = [[] for _ in range(runner.slots)]
        self.name = name
        self.size_ratio = size_ratio  # the draft's parameters over the model's: a token's cost before any is timed
        self.memory_bytes = runner.info.model_bytes + runner.kv_cache_bytes()
        self.seconds_per_token: float | None = None
        self.min_probability = DRAFT_MIN_PROBABILITY
        self.rounds = 0  # packed steps that drafted (each for every chat still drafting): for tests

    @classmethod
    def open(cls, config: ModelConfig, target: HfRunner, load: Load, progress: Progress,
             cancelled: Callable[[], bool]) -> HfDraftModel:
        """The draft model config.draft_model (a transformers folder), loaded by `load` (HfRunner.load) with the
        model's slots and context, checked against the model's vocabulary; RunnerError says why one cannot serve."""
        assert config.draft_model
        path = Path(config.draft_model)
        progress(1.0, f"Loading the draft model {path.name}")
        draft_config = dataclasses.replace(config, path=str(path), draft_model=None, gguf_file=None, mmproj=None)
        runner = load(draft_config, lambda fraction, what: None, cancelled)
        try:
            problem = vocabulary_problem(target.tokenizer, runner.tokenizer, Path(config.path).name, path.name)
            if problem:
                raise RunnerError(problem)
            if cancelled():
                raise LoadCancelled(f"Loading the draft model {path.name} was cancelled.")
        except BaseException:
            runner.close()
            raise
        vocabulary = min(len(target.tokenizer), len(runner.tokenizer))
        ratio = _parameters(runner) / max(_parameters(target), 1)
        return cls(runner, vocabulary, ratio, path.name)

    def draft(self, wants: Sequence[Want], is_end: Callable[[int], bool]) -> list[list[int]]:
        """Each want's guessed next tokens (up to its count; fewer where the draft model stops), made in one packed
        step per position over every chat."""
        runner = self._runner
        if runner is None:
            raise RunnerError("The draft model was closed.")
        drafts: list[list[int]] = [[] for _ in wants]
        going = drafting(wants, self._n_vocab)
        if not going:
            return drafts
        started = time.perf_counter()
        read_prompt = reads_prompt(wants, going, self._cached)
        guesses = self._feed([(wants[index][0], wants[index][1]) for index in going], sample=True)
        while going:
            feeding = []
            for index in going:
                slot = wants[index][0]
                token, probability = guesses[slot]
                if is_end(token) or token >= self._n_vocab:
                    continue
                drafts[index].append(token)
                if len(drafts[index]) < wants[index][2] and probability >= self.min_probability:
                    feeding.append(index)
            going = feeding
            if going:
                guesses = self._step([(wants[index][0], [drafts[index][-1]]) for index in going], sample=True)
        self._time(time.perf_counter() - started, sum(len(draft) for draft in drafts), read_prompt)
        return drafts

    def read(self, slot: int, tokens: Sequence[int]) -> None:
        """Bring the slot's cache up to `tokens` (a prompt the model is reading this step), so that its first
        draft reads only the tokens after it."""
        if self._runner is not None and tokens and max(tokens) < self._n_vocab:
            self._feed([(slot, tokens)], sample=False)

    def _feed(self, wants: list[tuple[int, Sequence[int]]], sample: bool) -> dict[int, tuple[int, float]]:
        """Each slot's cache cut back to its longest common prefix with its tokens (all but the last where `sample`
        asks for a guess after the last one) and fed the rest, in chunks of the batch; each slot's guess."""
        assert self._runner is not None
        pending: list[Feed] = []
        for slot, tokens in wants:
            cached = self._cached[slot]
            keep = kept_prefix(cached, tokens, keep_last=sample)
            if keep < len(cached):
                self._runner.remove_from(slot, keep)
                del cached[keep:]
            if keep < len(tokens):
                pending.append((slot, list(tokens[keep:])))
        guesses: dict[int, tuple[int, float]] = {}
        for chunk, ending in in_chunks(pending, max(self._runner.batch_tokens, 1)):
            guesses.update(self._step(chunk, sample=False, sampled=ending if sample else set()))
        return guesses

    def _step(self, feeds: list[tuple[int, list[int]]], sample: bool, sampled: set[int] | None = None
              ) -> dict[int, tuple[int, float]]:
        """One packed step of each slot's tokens after what its cache holds; the guess (likeliest token and its
        probability) after the last token of each slot in `sampled` (every slot where `sample`)."""
        assert self._runner is not None
        wanted = {slot for slot, _ in feeds} if sample else (sampled or set())
        work = [SlotWork(slot, tokens, len(self._cached[slot]), slot in wanted) for slot, tokens in feeds]
        try:
            new = self._runner.forward(work)
        except RunnerError:
            for slot, _ in feeds:  # what the failed step left in the caches is unknown: read them again
                self.forget(slot)
            raise
        self.rounds += 1
        for slot, tokens in feeds:
            self._cached[slot].extend(tokens)
        return {slot: (new[slot][0], self._probability(slot, new[slot][0])) for slot in wanted}

    def _probability(self, slot: int, token: int) -> float:
        assert self._runner is not None
        logits = self._runner.last_logits(slot).astype(np.float64)
        return float(1.0 / np.exp(logits - logits[token]).sum())

    def _time(self, seconds: float, drafted: int, read_prompt: bool) -> None:
        """A call's seconds per drafted token, into the running figure; a call that read a prompt is not a
        drafting call's usual cost (the prompt is read once a turn)."""
        if drafted == 0 or read_prompt:
            return
        per_token, last = seconds / drafted, self.seconds_per_token
        self.seconds_per_token = per_token if last is None else (
            DRAFT_TIMING_MEMORY * last + (1 - DRAFT_TIMING_MEMORY) * per_token)

    def forget(self, slot: int) -> None:
        if self._runner is not None:
            self._runner.clear_slot(slot)
        self._cached[slot].clear()

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
        self._runner = None


def _parameters(runner: HfRunner) -> int:
    return sum(int(parameter.numel()) for parameter in runner.model.parameters()) if runner.model is not None else 0
