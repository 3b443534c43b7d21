"""Running a check: the reference first, stored; then each candidate against it, one model at a time.

Memory: only one model is ever loaded. The reference is loaded, scores the
text (its distributions go to a ReferenceStore on disk) and answers the
questions, and is closed before the first candidate is loaded; so is each
candidate before the next. Tokenizers are compared before anything heavy
runs, so a mismatched candidate is refused at once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Literal, Protocol

import numpy as np

from engine.quantcheck import answers as qa
from engine.quantcheck.errors import Cancelled, CheckError
from engine.quantcheck.inputs import Question
from engine.quantcheck.metrics import Agreement, TokenAgreement, chunk_tokens, reference_rows, scored_range
from engine.quantcheck.report import CandidateResult, ModelCost, QuestionResult, ReferenceResult, Report
from engine.quantcheck.store import ReferenceStore
from engine.quantcheck.verdict import Evidence, judge
from engine.quantcheck.vocabulary import Vocabulary, refuse_unless_same
from engine.runners.base import LoadCancelled, RunnerError

Progress = Callable[[float, str], None]
Backend = Literal["llamacpp", "hf"]


@dataclass(frozen=True)
class ModelSpec:
    path: str
    backend: Backend = "llamacpp"
    quantization: str = "none"  # transformers: none, int8, nf4, fp4

    @property
    def label(self) -> str:
        name = Path(self.path).name or self.path
        return name if self.quantization == "none" else f"{name} ({self.quantization})"


@dataclass(frozen=True)
class CheckSpec:
    reference: ModelSpec
    candidates: tuple[ModelSpec, ...]
    text: str
    questions: tuple[Question, ...]
    context_length: int = 512  # llama-perplexity's default
    chunks: int | None = None  # None: every whole chunk of the text
    max_answer_tokens: int = 64
    threads: int | None = None
    work_folder: Path | None = None  # where the reference's distributions are kept while it runs


class Scorer(Protocol):
    runner: Any
    vocabulary_size: int
    context_length: int
    quantization: str
    size_bytes: int
    footprint_bytes: int

    def text_tokens(self, text: str) -> list[int]: ...
    def chunk_bos(self) -> int | None: ...
    def chunk_logits(self, chunk: list[int], first: int, last: int) -> np.ndarray: ...
    def close(self) -> None: ...


ChunkSink = Callable[[int, np.ndarray, np.ndarray], None]  # chunk index, logits, next tokens


@dataclass(frozen=True)
class ModelRun:
    quant: str
    tokens: list[int]
    answers: list[qa.Answer]
    cost: ModelCost
    chunks: int
    context_length: int  # the reference's may be capped at what its model was trained on


class _Steps:
    """Progress over every model's load, chunks and questions, known once the text is tokenized."""

    def __init__(self, progress: Progress, models: int, questions: int) -> None:
        self.progress, self.models, self.questions = progress, models, questions
        self.done, self.total = 0, 0

    def set_chunks(self, chunks: int) -> None:
        self.total = self.models * (1 + chunks + self.questions)

    def step(self, message: str) -> None:
        self.done += 1
        self.progress(min(self.done / self.total, 1.0) if self.total else 0.0, message)


def run_check(spec: CheckSpec, progress: Progress, cancelled: Callable[[], bool]) -> Report:
    """The report; raises CheckError (in words) or Cancelled, and leaves no files behind."""
    started = time.perf_counter()
    if not spec.candidates:
        raise CheckError("Name at least one candidate to compare with the reference.")
    progress(0.0, "Comparing tokenizers")
    reference_vocabulary = read_vocabulary(spec.reference)
    for candidate in spec.candidates:
        _raise_if_cancelled(cancelled)
        refuse_unless_same(reference_vocabulary, read_vocabulary(candidate), spec.reference.path, candidate.path)
    steps = _Steps(progress, 1 + len(spec.candidates), len(spec.questions))
    with ReferenceStore(len(reference_vocabulary.tokens), spec.work_folder) as store:
        reference = _run_reference(spec, store, steps, cancelled)
        context_length = reference.context_length
        results = tuple(
            _run_candidate(spec, candidate, store, reference, steps, cancelled)
            for candidate in spec.candidates
        )
        store_ppl = store.perplexity()
    first, last = scored_range(context_length)
    return Report(
        reference=ReferenceResult(spec.reference.path, reference.quant, store_ppl, reference.cost),
        candidates=results, backend=spec.reference.backend, context_length=context_length,
        chunks=reference.chunks, positions=reference.chunks * (last - first),
        seconds=time.perf_counter() - started, created=datetime.now().isoformat(timespec="seconds"),
    )


def read_vocabulary(model: ModelSpec) -> Vocabulary:
    try:
        if model.backend == "hf":
            from engine.quantcheck.hf import read_vocabulary as read_hf

            return read_hf(model.path)
        from engine.quantcheck.llamacpp import read_vocabulary as read_gguf

        return read_gguf(model.path)
    except RunnerError as error:
        raise CheckError(str(error)) from error


def _run_reference(spec: CheckSpec, store: ReferenceStore, steps: _Steps, cancelled: Callable[[], bool]) -> ModelRun:
    def keep(index: int, logits: np.ndarray, targets: np.ndarray) -> None:
        store.append(reference_rows(logits, targets))

    run = _run_model(spec, spec.reference, spec.context_length, keep, None, steps, cancelled)
    store.finish()
    return run


def _run_candidate(
    spec: CheckSpec, candidate: ModelSpec, store: ReferenceStore, reference: ModelRun, steps: _Steps,
    cancelled: Callable[[], bool],
) -> CandidateResult:
    agreement = Agreement()

    def compare(index: int, logits: np.ndarray, targets: np.ndarray) -> None:
        agreement.add(store.chunk(index), logits, targets)

    run = _run_model(spec, candidate, reference.context_length, compare, reference.tokens, steps, cancelled)
    questions = tuple(
        _compare_answers(question, ref, cand) for question, ref, cand in zip(spec.questions, reference.answers, run.answers)
    )
    summary = agreement.summary()
    return CandidateResult(candidate.path, run.quant, summary, run.cost, questions, judge(_evidence(run.quant, summary, questions)))


def _run_model(
    spec: CheckSpec, model: ModelSpec, context_length: int, sink: ChunkSink, expected_tokens: list[int] | None,
    steps: _Steps, cancelled: Callable[[], bool],
) -> ModelRun:
    """Load, score the text, answer the questions, close: only the results outlive the call."""
    baseline = _rss()
    load_started = time.perf_counter()
    scorer = _open(spec, model, context_length, steps, cancelled)
    try:
        load_s = time.perf_counter() - load_started
        tokens = scorer.text_tokens(spec.text)
        if expected_tokens is not None:
            _refuse_unlike(model, scorer, tokens, expected_tokens, context_length)
        chunks = chunk_tokens(tokens, scorer.context_length, scorer.chunk_bos(), spec.chunks)
        if not chunks:
            raise CheckError(f"The text has only {len(tokens):,} tokens; a context of {scorer.context_length} "
                             "needs at least that many. Give a longer text or a shorter context.")
        steps.set_chunks(len(chunks))
        steps.step(f"{model.label}: loaded")
        peak = [baseline]
        prefill_s = _score_text(scorer, chunks, sink, model, steps, cancelled, peak)
        answered = _answer_all(scorer, spec, model, steps, cancelled, peak)
        cost = _cost(scorer, answered, load_s, prefill_s, sum(map(len, chunks)), max(peak) - baseline)
        return ModelRun(scorer.quantization, tokens, answered, cost, len(chunks), scorer.context_length)
    except RunnerError as error:  # a decode that failed halfway: which model, in words
        raise CheckError(f"{model.label}: {error}") from error
    finally:
        scorer.close()


def _refuse_unlike(model: ModelSpec, scorer: Scorer, tokens: list[int], expected: list[int], context_length: int) -> None:
    if tokens != expected:
        raise CheckError(f"{model.path} tokenizes the reference text differently from the reference: "
                         "its tokenizer is not the same, so the comparison would be meaningless.")
    if scorer.context_length != context_length:
        raise CheckError(f"{model.path} takes a context of at most {scorer.context_length} tokens, the reference "
                         f"{context_length}: the chunks would differ. Use a shorter context.")


def _open(spec: CheckSpec, model: ModelSpec, context_length: int, steps: _Steps, cancelled: Callable[[], bool]) -> Scorer:
    def on_load(fraction: float, message: str) -> None:
        steps.progress(steps.done / steps.total if steps.total else 0.0, f"{model.label}: {message.lower()} {fraction:.0%}")

    try:
        if model.backend == "hf":
            from engine.quantcheck.hf import HfScorer

            return HfScorer.open(model.path, model.quantization, context_length, spec.threads, on_load, cancelled)
        from engine.quantcheck.llamacpp import LlamaCppScorer

        return LlamaCppScorer.open(model.path, context_length, spec.threads, on_load, cancelled)
    except LoadCancelled as error:
        raise Cancelled() from error
    except RunnerError as error:
        raise CheckError(f"{model.label}: {error}") from error


def _score_text(
    scorer: Scorer, chunks: list[list[int]], sink: ChunkSink, model: ModelSpec, steps: _Steps,
    cancelled: Callable[[], bool], peak: list[int],
) -> float:
    first, last = scored_range(scorer.context_length)
    seconds = 0.0
    for index, chunk in enumerate(chunks):
        _raise_if_cancelled(cancelled)
        started = time.perf_counter()
        logits = scorer.chunk_logits(chunk, first, last)
        seconds += time.perf_counter() - started
        peak.append(_rss())
        sink(index, logits, np.asarray(chunk[first + 1 : last + 1], dtype=np.int64))
        steps.step(f"{model.label}: text chunk {index + 1} of {len(chunks)}")
    return seconds


def _answer_all(
    scorer: Scorer, spec: CheckSpec, model: ModelSpec, steps: _Steps, cancelled: Callable[[], bool], peak: list[int]
) -> list[qa.Answer]:
    answered = []
    for number, question in enumerate(spec.questions, start=1):
        answered.append(qa.answer(scorer.runner, question, spec.max_answer_tokens, cancelled))
        peak.append(_rss())
        steps.step(f"{model.label}: question {number} of {len(spec.questions)}")
    return answered


def _cost(scorer: Scorer, answered: list[qa.Answer], load_s: float, prefill_s: float, prefill_tokens: int,
          memory_bytes: int) -> ModelCost:
    decode_s = sum(a.decode_seconds for a in answered)
    decode_tokens = sum(a.decode_tokens for a in answered)
    return ModelCost(
        size_bytes=scorer.size_bytes, footprint_bytes=scorer.footprint_bytes, memory_bytes=max(memory_bytes, 0),
        tok_s=decode_tokens / decode_s if decode_s else 0.0,
        prefill_tok_s=prefill_tokens / prefill_s if prefill_s else 0.0, load_s=load_s,
    )


def _compare_answers(question: Question, reference: qa.Answer, candidate: qa.Answer) -> QuestionResult:
    return QuestionResult(
        prompt=question.prompt, kind=question.kind, reference_answer=reference.text, answer=candidate.text,
        same=qa.same_start(reference.tokens, candidate.tokens), similarity=qa.similarity(reference.tokens, candidate.tokens),
        reference_right=qa.is_right(reference.text, question), right=qa.is_right(candidate.text, question),
        reference_json=qa.parses_as_json(reference.text) if question.wants_json else None,
        json_ok=qa.parses_as_json(candidate.text) if question.wants_json else None,
    )


def _evidence(quant: str, summary: TokenAgreement, questions: tuple[QuestionResult, ...]) -> Evidence:
    json_asked = [q for q in questions if q.json_ok is not None]
    hard_right = [q for q in questions if q.kind in ("arithmetic", "reasoning") and q.reference_right]
    return Evidence(
        quant=quant, mean_kld=summary.mean_kld, same_top_p=summary.same_top_p, json_questions=len(json_asked),
        json_reference_ok=sum(bool(q.reference_json) for q in json_asked),
        json_lost=sum(bool(q.reference_json) and not q.json_ok for q in json_asked),
        hard_reference_right=len(hard_right), hard_dropped=sum(not q.right for q in hard_right),
    )


def _raise_if_cancelled(cancelled: Callable[[], bool]) -> None:
    if cancelled():
        raise Cancelled()


def _rss() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)
