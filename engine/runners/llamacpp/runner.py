"""The llama.cpp runner: one context, one sequence per slot, one llama_decode per step.

Built on llama-cpp-python's low-level bindings because its high-level `Llama`
class decodes sequence 0 only. Each slot has its own stream of the KV cache
(`kv_unified` off, params.py): `context_length` cells that only its own tokens
attend over. Opening the file is open.py's, the model's text side text.py's, the
step's batch batch.py's, the slots' sampler chains sampling.py's and the record of what each
slot's cells hold slot_cache.py's.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

import llama_cpp
import numpy as np

from engine.chat_template import render_chat
from engine.constraints.slots import spare_core
from engine.detokenizer import ByteDetokenizer
from engine.protocol import (
    ChatMessage,
    Constraint,
    ModelConfig,
    ModelInfo,
    SamplingParams,
    TokenLogprob,
    ToolSpec,
)
from engine.runners.base import CacheFull, Progress, RunnerError, SlotWork
from engine.runners.llamacpp.batch import fill_batch, free_handles
from engine.runners.llamacpp.draft_model import DraftModel
from engine.runners.llamacpp.embeddings import LlamaEmbedder
from engine.runners.llamacpp.open import open_model
from engine.runners.llamacpp.params import GenerationThreads
from engine.runners.llamacpp.picture_rows import SlotRows
from engine.runners.llamacpp.pictures import MARK_START, LlamaPictures
from engine.runners.llamacpp.prompt_copy import PromptReader
from engine.runners.llamacpp.rows import SampledRows
from engine.runners.llamacpp.sampling import SlotSamplers
from engine.runners.llamacpp.slot_cache import SlotCache
from engine.runners.llamacpp.text import ModelText
from engine.runners.verify import verify_draft


class LlamaCppRunner:
    """Owns the model, the context, the batch and one sampler chain per slot."""

    def __init__(
        self, model: int, context: int, info: ModelInfo, config: ModelConfig, reader: PromptReader | None = None,
        pictures: LlamaPictures | None = None, drafter: DraftModel | None = None,
    ) -> None:
        self._model: int | None = model
        self._context: int | None = context
        self.info = info
        self.slots = config.slots
        self.context_length = info.context_length
        # llama.cpp caps n_batch at n_ctx; a larger batch would abort the process, not fail.
        self.batch_tokens = int(llama_cpp.llama_n_batch(context))
        self._text = ModelText(model)
        self._vocab, self._n_vocab = self._text.vocab, self._text.n_vocab
        self._piece = self._text.piece
        self._tokens = self._text.tokens
        self._capacity = self.batch_tokens
        # The prompt threads for steps that read a prompt (params.default_threads); for steps that
        # generate (drafts or not) every core while the rest of the machine is idle, else the
        # generation threads (params.GenerationThreads). One count for both of llama.cpp's settings.
        self._threads = (int(llama_cpp.llama_n_threads(context)), int(llama_cpp.llama_n_threads_batch(context)))
        self._step_threads: int | None = None  # set for n_threads and n_threads_batch alike by _use_threads
        self._generation_threads = GenerationThreads(*self._threads)
        self._batch: llama_cpp.llama_batch | None = llama_cpp.llama_batch_init(self._capacity, 0, 1)
        self._samplers = SlotSamplers(self._n_vocab)
        self._sampled_at: dict[int, int] = {}  # slot -> batch index of its logits in the last step
        self.end_markers = self._text.end_markers
        self.output_format = self._text.output_format
        self.pictures = pictures  # a vision projector's context (pictures.py), or None
        # its rows into the slots' sequences, and each slot's positions where they are not one per token
        self._picture_rows = SlotRows(pictures, context)
        vision = ("vision",) if pictures is not None else ()
        self.info = dataclasses.replace(info, capabilities=(*self.output_format.capabilities, *vision))
        self._rows = SampledRows(self._vocab, self._n_vocab, self.is_end_of_generation, self._piece)
        drops_tails = not (llama_cpp.llama_model_is_recurrent(model) or llama_cpp.llama_model_is_hybrid(model))
        self._cache = SlotCache(context, self.slots, reader, self._picture_rows, drops_tails, info.gpu_offload)
        self._cached = self._cache.tokens  # each slot's tokens in the cache (slot_cache.py)
        self.can_draft = drops_tails  # a recurrent state cannot drop a rejected draft's positions
        self.drafter = drafter  # a draft model's guesses (draft_model.py); used where can_draft
        self.splits_uneven_steps = True  # one stream per chat (params.py): llama.cpp's split_equal
        self._embedder: LlamaEmbedder | None = None  # its own context, made on the first embedding

    @classmethod
    def load(cls, config: ModelConfig, progress: Progress, cancelled: Callable[[], bool]) -> LlamaCppRunner:
        return open_model(config, progress, cancelled, cls)

    # ------------------------------------------------------------ text

    def render_chat(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = (),
                    options: Sequence[tuple[str, str]] = ()) -> str:
        if self.pictures is not None:  # each picture becomes a marker that tokenize() expands
            messages = self.pictures.render(messages)
        return render_chat(self._text.template, messages, self._text.bos_text, self._text.eos_text, tools, options)

    def tokenize(self, text: str) -> list[int]:
        add_bos = self._text.adds_bos(text)
        if self.pictures is not None and MARK_START in text:
            return self.pictures.tokenize(text, lambda piece, first: self._tokens(piece, add_special=first and add_bos))
        return self._tokens(text, add_special=add_bos)

    def detokenizer(self) -> ByteDetokenizer:
        return ByteDetokenizer(self._piece)

    def is_end_of_generation(self, token: int) -> bool:
        return self._text.is_end_of_generation(token)

    # ------------------------------------------------------------ sampling

    def begin_turn(self, slot: int, params: SamplingParams) -> None:
        self._rows.begin_turn(slot, params)  # first: a constraint that does not compile leaves the slot as it was
        self._samplers.begin(slot, params)

    def set_constraint(self, slot: int, constraint: Constraint | None) -> None:
        self._rows.constraints.set(slot, constraint)

    def constraints_ready(self, wait: float = 0.0) -> bool:
        return self._rows.constraints.ready(wait)

    def prepare_constraints(self) -> None:
        if self.info.gpu_offload or spare_core(self._threads[1]):  # the prompt's read is what it would slow
            self._rows.constraints.ready()

    def forced_tokens(self, slot: int, limit: int) -> list[int]:
        return self._rows.constraints.forced(slot, limit, self.is_end_of_generation)

    def step_logprobs(self, slot: int) -> list[TokenLogprob]:
        return self._rows.entries.get(slot, [])

    # ------------------------------------------------------------ the cache

    def remove_from(self, slot: int, position: int) -> bool:
        return self._cache.remove_from(slot, position)

    def clear_slot(self, slot: int) -> None:
        self._cache.clear(slot)

    def copy_prefix(self, source: int, target: int, length: int) -> bool:
        return self._cache.copy_prefix(source, target, length)

    def kv_cache_bytes(self) -> int:
        return self.info.kv_cache_bytes

    # ------------------------------------------------------------ the step

    def forward(self, work: Sequence[SlotWork]) -> dict[int, list[int]]:
        if self._context is None or self._batch is None:
            raise RunnerError("The model was closed.")
        self._sampled_at = {}
        reader = self._cache.reader
        seen = self.pictures.base if self.pictures is not None else self._n_vocab
        read = [item for item in work if reader is not None and reader.takes(item) and max(item.tokens, default=0) < seen
                and self._picture_rows.counts_tokens(item, self._cached)]
        plan = [item for item in work if not any(item is other for other in read)]
        for item in read:
            plan += self._read_with_copy(item)
        for item in plan:
            self._cache.settle(item.slot)
        plan = self._picture_rows.decode_plan(plan, self._cached, lambda: self._use_threads(self._threads[1]))
        if not plan:
            return {}
        outputs = fill_batch(self._batch, self._capacity, plan, self._samplers.__contains__, self._record,
                             self._picture_rows.step_positions(plan, self._cached), self._rows.known)
        reads_prompt = any(len(item.tokens) > 1 for item in plan)
        threads = self._threads[1] if reads_prompt else self._generation_threads.pick()
        self._rows.entries = {}
        # the masks begin (beside the pass, or first where it takes every core); maybe a thread fewer for it
        threads = self._rows.start_step([(item.slot, item.draft) for item, _ in outputs], threads,
                                        self.info.gpu_offload, reads_prompt)
        self._use_threads(threads)
        if self.drafter is not None and not reads_prompt:
            self.drafter.use_threads(threads)  # it drafts between the model's steps, never beside one
        started = time.perf_counter()
        try:
            result = llama_cpp.llama_decode(self._context, self._batch)  # drops the GIL: the masks fill meanwhile
        finally:
            self._rows.end_step(threads, time.perf_counter() - started)
        if result == 1:
            raise CacheFull(
                f"The model's memory for this chat ({self.context_length:,} tokens) has no room left, so the answer "
                "stopped here. Start a new chat, or raise the context length in Settings."
            )
        if result != 0:
            raise RunnerError(f"llama.cpp failed to decode a batch of {self._batch.n_tokens} tokens (error {result}).")
        return {item.slot: self._sample_and_verify(item, rows) for item, rows in outputs}

    def _read_with_copy(self, item: SlotWork) -> list[SlotWork]:
        """A long prompt chunk, read by the F32 copy's context. Where the chunk ends in a sample, its last
        token is left to the generating context (returned as its work): every token is sampled from the
        quantized model's own logits, and chats whose prompts agree sample alike however their cells
        were read."""
        assert self._cache.reader is not None
        if item.sample and item.slot not in self._samplers:
            raise RunnerError(f"Slot {item.slot} has no sampler: begin_turn was not called.")
        copied = dataclasses.replace(item, tokens=item.tokens[:-1], sample=False) if item.sample else item
        self._cached[item.slot][item.start_pos:] = copied.tokens
        self._accept_prompt(copied)
        self._cache.reader.read(copied)
        if not item.sample:
            return []
        return [SlotWork(item.slot, item.tokens[-1:], item.start_pos + len(copied.tokens), True)]

    def _use_threads(self, threads: int) -> None:
        """llama.cpp takes n_threads for a pass of one token and n_threads_batch for more: both, here."""
        if threads != self._step_threads:
            llama_cpp.llama_set_n_threads(self._context, threads, threads)
            self._step_threads = threads

    def _sample_and_verify(self, item: SlotWork, rows: range) -> list[int]:
        """Sample at each row in turn with the slot's chain, as llama-server's common_sampler_sample_and_accept_n
        does: keep going while the sample equals the draft token there. Each sample is one the chain would
        have drawn generating token by token (its penalty history and random state advance once per token
        kept, and nothing is sampled past the first disagreement), so drafts never change the answer."""
        assert self._context is not None
        chain, context = self._samplers.chain(item.slot), self._context

        def sample_at(offset: int) -> int:
            self._sampled_at[item.slot] = rows[offset]
            return self._rows.sample(chain, context, item.slot, rows[offset], offset)

        tokens = verify_draft(item.draft, sample_at)  # exact for any draft: verify.py
        self._samplers.sampled(item.slot)
        self._rows.constraints.consume(item.slot, tokens, self.is_end_of_generation)
        return tokens

    def last_logits(self, slot: int) -> np.ndarray:
        """The logits `slot` sampled from in the last step (a copy): for checks against a reference."""
        if self._context is None or slot not in self._sampled_at:
            raise RunnerError(f"Slot {slot} sampled nothing in the last step.")
        row = llama_cpp.llama_get_logits_ith(self._context, self._sampled_at[slot])
        return np.ctypeslib.as_array(row, shape=(self._n_vocab,)).copy()

    def _record(self, item: SlotWork) -> None:
        """The step's tokens of a slot go into its cache record and, on a new turn, its chain's penalty."""
        self._cached[item.slot][item.start_pos:] = item.fed
        self._accept_prompt(item)

    def _accept_prompt(self, item: SlotWork) -> None:
        self._samplers.accept_prompt(item.slot, self._cached[item.slot][: item.start_pos + len(item.tokens)])

    # ------------------------------------------------------------ embeddings

    def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], list[int]]:
        """Each text's unit-length mean-pooled vector and its token count (embeddings.py)."""
        if self._model is None:
            raise RunnerError("The model was closed.")
        if self._embedder is None:
            self._embedder = LlamaEmbedder(self._model, self.context_length, self._threads[1])
        token_lists = [self._tokens(text, add_special=True) for text in texts]
        return [self._embedder.embed(tokens) for tokens in token_lists], [len(tokens) for tokens in token_lists]

    # ------------------------------------------------------------ the end

    def close(self) -> None:
        if self.drafter is not None:
            self.drafter.close()
            self.drafter = None
        if self._embedder is not None:
            self._embedder.close()
            self._embedder = None
        self._samplers.close()
        self._rows.constraints.close()
        self._cache.close()
        self._picture_rows.close()
        if self.pictures is not None:
            self.pictures.close()
            self.pictures = None
        free_handles(self._batch, self._context, self._model)
        self._batch = self._context = self._model = None

