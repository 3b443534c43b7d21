"""The llama.cpp runner: one context, one sequence per slot, one llama_decode per step.

Built on llama-cpp-python's low-level bindings because its high-level `Llama`
class decodes sequence 0 only. Each slot has its own stream of the KV cache
(`kv_unified` off, params.py): `context_length` cells that only its own tokens
attend over.
"""

from __future__ import annotations

import ctypes
import dataclasses
from pathlib import Path
from typing import Any, Callable, Sequence, cast

import llama_cpp
import numpy as np

from engine.chat_template import end_markers, render_chat
from engine.constraints.slots import spare_core
from engine.detokenizer import ByteDetokenizer
from engine.parsing.detect import detect_format
from engine.protocol import (
    ChatMessage,
    Constraint,
    ModelConfig,
    ModelInfo,
    SamplingParams,
    TokenLogprob,
    ToolSpec,
)
from engine.runners.base import (
    PENALTY_LAST_N,
    CacheFull,
    LoadCancelled,
    Progress,
    RunnerError,
    SlotWork,
)
from engine.runners.llamacpp.batch import free_handles, put_tokens
from engine.runners.llamacpp.cells import copy_sequence
from engine.runners.llamacpp.embeddings import LlamaEmbedder
from engine.runners.llamacpp.info import build_info, chat_template, placement
from engine.runners.llamacpp.load import (
    check_config,
    check_file,
    create_context,
    llama_log,
    load_model,
)
from engine.runners.llamacpp.params import GenerationThreads
from engine.runners.llamacpp.pictures import MARK_START, LlamaPictures, load_pictures
from engine.runners.llamacpp.prompt_copy import PromptReader
from engine.runners.llamacpp.prompt_reading import prompt_reader
from engine.runners.llamacpp.rows import SampledRows
from engine.runners.llamacpp.sampling import sampler_chain
from engine.runners.llamacpp.vocabulary import special_id, tokenize


class LlamaCppRunner:
    """Owns the model, the context, the batch and one sampler chain per slot."""

    def __init__(
        self, model: int, context: int, info: ModelInfo, config: ModelConfig, reader: PromptReader | None = None,
        pictures: LlamaPictures | None = None,
    ) -> None:
        self._model: int | None = model
        self._context: int | None = context
        self.info = info
        self.slots = config.slots
        self.context_length = info.context_length
        # llama.cpp caps n_batch at n_ctx; a larger batch would abort the process, not fail.
        self.batch_tokens = int(llama_cpp.llama_n_batch(context))
        self._vocab = llama_cpp.llama_model_get_vocab(model)
        self._n_vocab = llama_cpp.llama_vocab_n_tokens(self._vocab)
        self._memory = llama_cpp.llama_get_memory(context)
        self._capacity = self.batch_tokens
        # The prompt threads for steps that read a prompt (params.default_threads); for steps that
        # generate (drafts or not) every core while the rest of the machine is idle, else the
        # generation threads (params.GenerationThreads). One count for both of llama.cpp's settings.
        self._threads = (int(llama_cpp.llama_n_threads(context)), int(llama_cpp.llama_n_threads_batch(context)))
        self._step_threads: int | None = None  # set for n_threads and n_threads_batch alike by _use_threads
        self._generation_threads = GenerationThreads(*self._threads)
        self._batch: llama_cpp.llama_batch | None = llama_cpp.llama_batch_init(self._capacity, 0, 1)
        self._samplers: dict[int, llama_cpp.llama_sampler_p] = {}
        self._fresh: set[int] = set()  # slots whose sampler has not yet seen this turn's prompt
        self._cached: list[list[int]] = [[] for _ in range(self.slots)]  # each slot's tokens in the cache
        self._pieces: dict[int, bytes] = {}
        self._sampled_at: dict[int, int] = {}  # slot -> batch index of its logits in the last step
        self._reader = reader  # long prompt chunks are read with the F32 copy (prompt_copy.py)
        self._template = chat_template(model)
        self._bos_text = self._token_text(llama_cpp.llama_vocab_bos(self._vocab))
        self._eos_text = self._token_text(llama_cpp.llama_vocab_eos(self._vocab))
        self._adds_bos = bool(llama_cpp.llama_vocab_get_add_bos(self._vocab))
        self.end_markers = end_markers(self._template)
        self._marker_tokens = {ids[0] for ids in map(self._tokens, self.end_markers) if len(ids) == 1}
        self.output_format = detect_format(self._template, lambda text: len(self._tokens(text)) == 1,
                                           self._bos_text, self._eos_text,
                                           lambda text: special_id(self._vocab, text))
        # The markers the parser reads are shown even where they are control tokens; other control tokens not.
        self._shown_controls = {self._tokens(text)[0] for text in self.output_format.marker_texts}
        self.pictures = pictures  # a vision projector's context (pictures.py), or None
        vision = ("vision",) if pictures is not None else ()
        self.info = dataclasses.replace(info, capabilities=(*self.output_format.capabilities, *vision))
        self._rows = SampledRows(self._vocab, self._n_vocab, self.is_end_of_generation, self._piece)
        # A recurrent state cannot drop positions (llama_memory_seq_rm fails): not a rejected draft's,
        # not the tail past a copied prompt start.
        self._drops_tails = not (llama_cpp.llama_model_is_recurrent(model) or llama_cpp.llama_model_is_hybrid(model))
        self.can_draft = self._drops_tails
        self.splits_uneven_steps = True  # one stream per chat (params.py): llama.cpp's split_equal
        self._embedder: LlamaEmbedder | None = None  # its own context, made on the first embedding

    @classmethod
    def load(cls, config: ModelConfig, progress: Progress, cancelled: Callable[[], bool]) -> LlamaCppRunner:
        path = check_file(config.path)
        check_config(config)
        mark = llama_log().mark()
        progress(0.0, "Loading weights")
        model = load_model(path, config, progress, cancelled)
        try:
            return cls._with_context(model, path, config, progress, cancelled, mark)
        except BaseException:
            llama_cpp.llama_model_free(model)
            raise

    @classmethod
    def _with_context(
        cls, model: int, path: Path, config: ModelConfig, progress: Progress, cancelled: Callable[[], bool], mark: int
    ) -> LlamaCppRunner:
        if cancelled():
            raise LoadCancelled(f"Loading {path.name} was cancelled.")
        trained = int(llama_cpp.llama_model_n_ctx_train(model))
        context_length = min(config.context_length, trained) if trained > 0 else config.context_length
        weights_on_gpu = placement(config, llama_log().since(mark))[1]
        context = create_context(model, path, config, context_length, weights_on_gpu)
        reader = pictures = None
        try:
            cells = int(llama_cpp.llama_n_ctx(context))
            info = build_info(model, path, config, context_length, cells, llama_log().since(mark))
            reader, info = prompt_reader(model, context, path, config, context_length, info, weights_on_gpu, progress)
            pictures = load_pictures(model, config, int(llama_cpp.llama_n_threads_batch(context)), weights_on_gpu)
            return cls(model, context, info, config, reader, pictures)
        except BaseException:
            if pictures is not None:
                pictures.close()
            if reader is not None:
                reader.close()
            llama_cpp.llama_free(context)
            raise

    # ------------------------------------------------------------ text

    def render_chat(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = (),
                    options: Sequence[tuple[str, str]] = ()) -> str:
        if self.pictures is not None:  # each picture becomes a marker that tokenize() expands
            messages = self.pictures.render(messages)
        return render_chat(self._template, messages, self._bos_text, self._eos_text, tools, options)

    def tokenize(self, text: str) -> list[int]:
        # A template that writes the BOS text itself must not get a second BOS.
        writes_bos = bool(self._bos_text) and text.startswith(self._bos_text)
        if self.pictures is not None and MARK_START in text:
            return self.pictures.tokenize(
                text, lambda piece, first: self._tokens(piece, add_special=first and not (self._adds_bos and writes_bos)))
        return self._tokens(text, add_special=not (self._adds_bos and writes_bos))

    def _tokens(self, text: str, add_special: bool = False) -> list[int]:
        return tokenize(self._vocab, text, add_special)

    def detokenizer(self) -> ByteDetokenizer:
        return ByteDetokenizer(self._piece)

    def _piece(self, token: int) -> bytes:
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._pieces[token] = self._token_to_piece(token)
        return piece

    def _token_to_piece(self, token: int) -> bytes:
        buffer = ctypes.create_string_buffer(64)
        # special=False: control tokens (<|im_end|> ...) render as nothing, but the markers the parser reads.
        special = token in self._shown_controls
        length = llama_cpp.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, special)
        if length < 0:
            buffer = ctypes.create_string_buffer(-length)
            length = llama_cpp.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, special)
        return buffer.raw[: max(length, 0)]

    def _token_text(self, token: int) -> str:
        if token < 0:
            return ""
        return _text(llama_cpp.llama_vocab_get_text(self._vocab, token))

    def is_end_of_generation(self, token: int) -> bool:
        return bool(llama_cpp.llama_vocab_is_eog(self._vocab, token)) or token in self._marker_tokens

    # ------------------------------------------------------------ sampling

    def begin_turn(self, slot: int, params: SamplingParams) -> None:
        self._rows.begin_turn(slot, params)  # first: a constraint that does not compile leaves the slot as it was
        self._free_sampler(slot)
        self._samplers[slot] = sampler_chain(params, self._n_vocab)
        self._fresh.add(slot)

    def set_constraint(self, slot: int, constraint: Constraint | None) -> None:
        self._rows.constraints.set(slot, constraint)

    def constraints_ready(self, wait: float = 0.0) -> bool:
        return self._rows.constraints.ready(wait)

    def step_logprobs(self, slot: int) -> list[TokenLogprob]:
        return self._rows.entries.get(slot, [])

    def _free_sampler(self, slot: int) -> None:
        chain = self._samplers.pop(slot, None)
        if chain:
            llama_cpp.llama_sampler_free(chain)
        self._fresh.discard(slot)

    # ------------------------------------------------------------ the cache

    def remove_from(self, slot: int, position: int) -> bool:
        self._settle(slot)
        removed = bool(llama_cpp.llama_memory_seq_rm(self._memory, slot, position, -1))
        if removed:
            del self._cached[slot][position:]
        return removed

    def clear_slot(self, slot: int) -> None:
        if self._reader is not None:
            self._reader.forget(slot)
        llama_cpp.llama_memory_seq_rm(self._memory, slot, -1, -1)
        self._cached[slot].clear()

    def copy_prefix(self, source: int, target: int, length: int) -> bool:
        """Give `target` the first `length` positions of `source`, so a prompt start computed once
        serves every slot; the tail past `length` goes. A recurrent state cannot lose a tail (it
        holds the whole sequence or nothing), so there the start is computed again."""
        if self._context is None or not self._drops_tails:
            return False
        self._settle(source)
        if self._reader is not None:
            self._reader.forget(target)
        copy_sequence(self._context, source, target, cache_on_gpu=self.info.gpu_offload)
        llama_cpp.llama_memory_seq_rm(self._memory, target, length, -1)
        self._cached[target] = self._cached[source][:length]
        return True

    def kv_cache_bytes(self) -> int:
        return self.info.kv_cache_bytes

    # ------------------------------------------------------------ the step

    def forward(self, work: Sequence[SlotWork]) -> dict[int, list[int]]:
        if self._context is None or self._batch is None:
            raise RunnerError("The model was closed.")
        self._sampled_at = {}
        reader = self._reader
        seen = self.pictures.base if self.pictures is not None else self._n_vocab
        read = [item for item in work if reader is not None and reader.takes(item) and max(item.tokens, default=0) < seen]
        plan = [item for item in work if not any(item is other for other in read)]
        for item in read:
            plan += self._read_with_copy(item)
        for item in plan:
            self._settle(item.slot)
        if self.pictures is not None:
            plan = self._decode_pictures(plan)
        if not plan:
            return {}
        outputs = self._fill_batch(plan)
        reads_prompt = any(len(item.tokens) > 1 for item in plan)
        threads = self._threads[1] if reads_prompt else self._generation_threads.pick()
        self._use_threads(threads)
        self._rows.entries = {}
        self._rows.constraints.start_masks([(item.slot, item.draft) for item, _ in outputs],
                                           concurrent=self.info.gpu_offload or spare_core(threads))
        try:
            result = llama_cpp.llama_decode(self._context, self._batch)  # drops the GIL: the masks fill meanwhile
        finally:
            self._rows.constraints.wait_masks()
        if result == 1:
            raise CacheFull(
                f"The model's memory for this chat ({self.context_length:,} tokens) has no room left, so the answer "
                "stopped here. Start a new chat, or raise the context length in Settings."
            )
        if result != 0:
            raise RunnerError(f"llama.cpp failed to decode a batch of {self._batch.n_tokens} tokens (error {result}).")
        return {item.slot: self._sample_and_verify(item, rows) for item, rows in outputs}

    def _decode_pictures(self, plan: list[SlotWork]) -> list[SlotWork]:
        """Each slot's rows up to its last picture into its sequence first (pictures.py); the rest of the
        step, every slot's text after its pictures, goes in the one token batch."""
        assert self.pictures is not None
        rest = []
        for item in plan:
            left = self.pictures.decode_pictures(item, self._decode_text, self._decode)
            if left is not item:
                self._cached[item.slot][item.start_pos:] = item.tokens[: left.start_pos - item.start_pos]
            if left.tokens or left.sample:
                rest.append(left)
        return rest

    def _decode_text(self, tokens: list[int], start: int, slot: int) -> None:
        assert self._batch is not None
        self._batch.n_tokens = put_tokens(self._batch, 0, tokens, start, slot)
        self._decode(self._batch)

    def _decode(self, batch: llama_cpp.llama_batch) -> None:
        self._use_threads(self._threads[1])  # a picture's rows and the text before it are prompt reading
        result = llama_cpp.llama_decode(self._context, batch)
        if result == 1:
            raise CacheFull(f"The model's memory for this chat ({self.context_length:,} tokens) has no room left for "
                            "the picture. Start a new chat, or raise the context length in Settings.")
        if result != 0:
            raise RunnerError(f"llama.cpp failed to decode a picture's {batch.n_tokens} rows (error {result}).")

    def _read_with_copy(self, item: SlotWork) -> list[SlotWork]:
        """A long prompt chunk, read by the F32 copy's context. Where the chunk ends in a sample, its last
        token is left to the generating context (returned as its work): every token is sampled from the
        quantized model's own logits, and chats whose prompts agree sample alike however their cells
        were read."""
        assert self._reader is not None
        if item.sample and item.slot not in self._samplers:
            raise RunnerError(f"Slot {item.slot} has no sampler: begin_turn was not called.")
        copied = dataclasses.replace(item, tokens=item.tokens[:-1], sample=False) if item.sample else item
        self._cached[item.slot][item.start_pos:] = copied.tokens
        self._accept_prompt(copied)
        self._reader.read(copied)
        if not item.sample:
            return []
        return [SlotWork(item.slot, item.tokens[-1:], item.start_pos + len(copied.tokens), True)]

    def _settle(self, slot: int) -> None:
        """Before the generating context touches `slot`: the cells the copy read for it come over."""
        if self._reader is not None:
            self._reader.flush(slot)
            self._reader.forget(slot)

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
        chain = self._samplers[item.slot]
        tokens: list[int] = []
        for offset, (row, guess) in enumerate(zip(rows, [*item.draft, None])):
            token = self._rows.sample(chain, self._context, item.slot, row, offset)
            tokens.append(token)
            self._sampled_at[item.slot] = row
            if token != guess:
                break
        self._fresh.discard(item.slot)
        self._rows.constraints.consume(item.slot, tokens, self.is_end_of_generation)
        return tokens

    def last_logits(self, slot: int) -> np.ndarray:
        """The logits `slot` sampled from in the last step (a copy): for checks against a reference."""
        if self._context is None or slot not in self._sampled_at:
            raise RunnerError(f"Slot {slot} sampled nothing in the last step.")
        row = llama_cpp.llama_get_logits_ith(self._context, self._sampled_at[slot])
        return np.ctypeslib.as_array(row, shape=(self._n_vocab,)).copy()

    def _fill_batch(self, work: Sequence[SlotWork]) -> list[tuple[SlotWork, range]]:
        """Every slot's tokens (drafts included) into the one batch; the batch rows where each sampling
        item wants logits: after its last token, and after each draft token."""
        assert self._batch is not None
        total = sum(len(w.tokens) + len(w.draft) for w in work)
        if total > self._capacity:
            raise RunnerError(f"A step of {total} tokens is larger than the batch of {self._capacity}.")
        batch = self._batch
        wants_logits = cast(Any, batch.logits)
        outputs: list[tuple[SlotWork, range]] = []
        index = 0
        for item in work:
            if item.sample and item.slot not in self._samplers:
                raise RunnerError(f"Slot {item.slot} has no sampler: begin_turn was not called.")
            if item.draft and not (item.sample and item.tokens):
                raise RunnerError(f"Slot {item.slot}: a draft needs a token before it and a sample after it.")
            fed = item.fed
            self._cached[item.slot][item.start_pos:] = fed
            self._accept_prompt(item)
            index = put_tokens(batch, index, fed, item.start_pos, item.slot)
            if item.sample and item.tokens:
                first = index - 1 - (len(fed) - len(item.tokens))
                for row in range(first, index):
                    wants_logits[row] = 1
                outputs.append((item, range(first, index)))
        batch.n_tokens = index
        return outputs

    def _accept_prompt(self, item: SlotWork) -> None:
        # The repeat penalty knows the prompt's last tokens, as llama.cpp's own server does: also
        # those a turn found in the cache, so a reused prompt is penalized as a fresh one is.
        chain = self._samplers.get(item.slot)
        if chain and item.slot in self._fresh:
            prompt = [t for t in self._cached[item.slot][: item.start_pos + len(item.tokens)] if t < self._n_vocab]
            for token in prompt[-PENALTY_LAST_N:]:
                llama_cpp.llama_sampler_accept(chain, token)

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
        if self._embedder is not None:
            self._embedder.close()
            self._embedder = None
        for slot in list(self._samplers):
            self._free_sampler(slot)
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self.pictures is not None:
            self.pictures.close()
            self.pictures = None
        free_handles(self._batch, self._context, self._model)
        self._batch = self._context = self._model = None


def _text(value: bytes | None) -> str:
    return value.decode("utf-8", errors="replace") if value else ""
