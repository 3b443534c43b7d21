"""The transformers (+ bitsandbytes) runner: one packed forward pass per step over all chats.

Design: our own batched decode over per-slot KV caches rather than
transformers' ContinuousBatchingManager. The engine's scheduler already plans
each step (prompt chunks beside decode tokens, cancel, stop strings, a cache
per chat kept across turns); the manager brings its own scheduler, thread and
request lifecycle, and forgets a request's cache when it finishes, so a chat's
next turn would re-read its whole history. Here the step plan maps onto ONE
`model(...)` call: all new tokens packed in a row, keys gathered per slot
(engine/runners/hf/cache.py), logits only where a token is sampled, and the
KV memory is exactly slots x context_length, allocated up front on a GPU.
The model's call is model_call.py's, the prompt text and the pictures' tokens chat_text.py's,
sampling a step's logits step_sampling.py's, and what the loaded model is (context, support,
ModelInfo) describe.py's.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from engine.constraints.slots import spare_core
from engine.detokenizer import OffsetDetokenizer
from engine.protocol import (
    ChatMessage,
    Constraint,
    ModelConfig,
    ModelInfo,
    SamplingParams,
    TokenLogprob,
    ToolSpec,
)
from engine.runners.base import Progress, RunnerError, SlotWork
from engine.runners.hf.cache import SlotCache, uses_varlen
from engine.runners.hf.chat_text import ChatText, picture_kind
from engine.runners.hf.decode import StaticDecoder, choose_decode, is_decode_step
from engine.runners.hf.draft_model import HfDraftModel
from engine.runners.hf.describe import (
    check_supported,
    describe,
    return_freed_memory,
    usable_context,
)
from engine.runners.hf.embeddings import embed, token_logprobs
from engine.runners.hf.load import Loaded, load
from engine.runners.hf.model_call import ModelCall
from engine.runners.hf.picture_steps import PictureSteps
from engine.runners.hf.rows import SampledRows
from engine.runners.hf.sampling import SlotSampler
from engine.runners.hf.step_sampling import check_step, sample_step
from engine.thread_cap import thread_cap

__all__ = ["GREEDY", "HfRunner", "return_freed_memory"]

GREEDY = SamplingParams(temperature=0.0, repeat_penalty=1.0)


class HfRunner:
    def __init__(self, loaded: Loaded, config: ModelConfig) -> None:
        self.model = loaded.model
        self.tokenizer = loaded.tokenizer
        self.device = loaded.device
        self._attention = loaded.attention
        self._varlen = uses_varlen(loaded.attention)  # packed cu_seqlens instead of a mask
        text_config = self.model.config.get_text_config()
        self.trained_context_length = int(getattr(text_config, "max_position_embeddings", 0) or 0)
        notes: list[str] = []  # what a person should know about the context or the kernels
        self.context_length = usable_context(config.context_length, self.trained_context_length, text_config, notes)
        self.slots = config.slots
        self.batch_tokens = config.batch_tokens
        self.can_draft = True  # dropping a slot's tail is a change of its length (cache.py)
        self.drafter: HfDraftModel | None = None  # a draft model's guesses (draft_model.py; ModelConfig.draft_model)
        self.splits_uneven_steps = False  # one padded pass whatever each slot feeds
        self._fast_decode = config.fast_decode
        static = config.fast_decode == "on" or (config.fast_decode == "auto" and self.device.type == "cuda")
        static = static and not self._varlen  # flash-attn reads cu_seqlens, not the static step's mask
        kind = picture_kind(loaded)
        static = static and not (kind and kind.mrope)  # its decode positions are not the cache rows (mrope.py)
        self._cache = SlotCache(
            text_config.num_hidden_layers, self.slots, self.context_length,
            preallocate=self.device.type == "cuda" or static, spare_rows=1 if static else 0,
        )
        self._decoder: StaticDecoder | None = None  # chosen after the warm-up step (_warm_up)
        self._decode_label = "eager"
        self._history: list[list[int]] = [[] for _ in range(self.slots)]  # the tokens each slot caches
        self._samplers = [SlotSampler(GREEDY) for _ in range(self.slots)]
        self._last_logits: dict[int, torch.Tensor] = {}  # slot -> the row its last token was sampled from
        head = self.model.get_output_embeddings()
        logits_width = int(head.weight.shape[0]) if head is not None else int(text_config.vocab_size)
        self._text = ChatText(loaded, logits_width)  # template, tokenizer, pictures (chat_text.py)
        self.end_markers, self.output_format = self._text.end_markers, self._text.output_format
        self._eog, self._pictures = self._text.eog, self._text.pictures
        self._rows = SampledRows(self.tokenizer, logits_width, self._eog)  # masks and log-probabilities
        self._calls = ModelCall(self.model, loaded.attention, loaded.dtype)
        self._loaded = loaded
        self._steps = PictureSteps(self._pictures, self.slots)  # the step plans, with what pictures need
        self.info = replace(describe(config, loaded, self.context_length, self.trained_context_length,
                                     self.kv_cache_bytes(), notes), capabilities=self._text.capabilities)

    # ------------------------------------------------------------ loading

    @classmethod
    def load(cls, config: ModelConfig, progress: Progress, cancelled: Callable[[], bool]) -> HfRunner:
        threads = config.threads or thread_cap()
        if threads:
            torch.set_num_threads(threads)
        loaded = load(config, progress, cancelled)
        check_supported(loaded)
        runner = cls(loaded, config)
        progress(0.97, "warming up")
        try:
            runner._warm_up()
            if config.draft_model:
                runner.drafter = HfDraftModel.open(config, runner, cls.load, progress, cancelled)
                runner.info = replace(runner.info, draft_model=runner.drafter.name,
                                      draft_model_bytes=runner.drafter.memory_bytes)
        except Exception:
            runner.close()
            raise
        return_freed_memory()
        progress(1.0, "ready")
        return runner

    def _warm_up(self) -> None:
        """One real step: allocates the cache and proves the model runs before a chat needs it."""
        token = self.tokenize("Hi")[-1]
        self.forward([SlotWork(slot=0, tokens=[token], start_pos=0, sample=True)])
        if self._cache.rows > self.slots:  # the storage exists now; see engine/runners/hf/decode.py
            decoder = StaticDecoder(self._cache, self._call_decode, additive_mask=self._attention == "eager")
            with torch.inference_mode():
                self._decoder, self._decode_label = choose_decode(
                    decoder, self._fast_decode, token, self._packed_decode_logits)
        self.clear_slot(0)
        self.info = self._describe_update()

    def _call_decode(self, ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor, cache: Any) -> torch.Tensor:
        return self._calls.decode(self.model, ids, positions, mask, cache)

    def _packed_decode_logits(self, token: int, position: int) -> torch.Tensor:
        """Today's packed step for one token of slot 0: what the decode graphs are checked against."""
        return self._packed_logits([SlotWork(0, [token], position, True)])[0][0]

    def _describe_update(self) -> ModelInfo:
        return replace(self.info, kv_cache_bytes=self.kv_cache_bytes(), decode=self._decode_label)

    # ------------------------------------------------------------ text

    def render_chat(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = (),
                    options: Sequence[tuple[str, str]] = ()) -> str:
        return self._text.render_chat(messages, tools, options)

    def tokenize(self, text: str) -> list[int]:
        return self._text.tokenize(text)

    def detokenizer(self) -> OffsetDetokenizer:
        return self._text.detokenizer()

    def is_end_of_generation(self, token: int) -> bool:
        return token in self._eog

    # ------------------------------------------------------------ slots

    def begin_turn(self, slot: int, params: SamplingParams) -> None:
        self._rows.begin_turn(slot, params)
        self._samplers[slot] = SlotSampler(params)

    def set_constraint(self, slot: int, constraint: Constraint | None) -> None:
        self._rows.constraints.set(slot, constraint)

    def constraints_ready(self, wait: float = 0.0) -> bool:
        return self._rows.constraints.ready(wait)

    def prepare_constraints(self) -> None:
        if self.device.type != "cpu" or spare_core(torch.get_num_threads()):
            self._rows.constraints.ready()

    def forced_tokens(self, slot: int, limit: int) -> list[int]:
        return self._rows.constraints.forced(slot, limit, self.is_end_of_generation)

    def step_logprobs(self, slot: int) -> list[TokenLogprob]:
        return self._rows.entries.get(slot, [])

    def remove_from(self, slot: int, position: int) -> bool:
        del self._history[slot][max(0, position):]
        self._steps.forget_from(slot, max(0, position))
        return True

    def copy_prefix(self, source: int, target: int, length: int) -> bool:
        """Copy the K/V rows of `source`'s first `length` positions into `target` (a system prompt
        shared by several chats is computed once); False when `source` does not hold that many."""
        if source == target or not 0 <= length <= len(self._history[source]):
            return False
        with torch.inference_mode():
            self._cache.copy_prefix(source, target, length)
        self._history[target] = self._history[source][:length]
        self._steps.copy_prefix(source, target, length)
        return True

    def clear_slot(self, slot: int) -> None:
        self._history[slot] = []
        self._steps.forget_from(slot, 0)

    def picture_tokens(self, width: int, height: int) -> int:
        """The prompt tokens a picture of this size takes, as the model's processor counts them (0: cannot see)."""
        return self._text.picture_tokens(width, height)

    def kv_cache_bytes(self) -> int:
        return self._cache.nbytes()

    # ------------------------------------------------------------ the step

    def forward(self, work: Sequence[SlotWork]) -> dict[int, list[int]]:
        if not work:
            return {}
        check_step(work, self._history, self.slots, self.context_length)
        self._rows.start(work, on_cpu=self.device.type == "cpu")  # the masks fill (torch drops the GIL)
        try:
            with torch.inference_mode():
                logits, _ = self._step_logits(work)
        except torch.cuda.OutOfMemoryError as error:
            raise RunnerError(
                f"the GPU ran out of memory in a step of {sum(len(item.tokens) for item in work)} tokens; "
                "lower the batch tokens or the number of chats in Settings"
            ) from error
        except (RuntimeError, ValueError, IndexError) as error:
            # Only the chats in this step fail; the engine and the other tabs go on.
            raise RunnerError(f"the model failed in this step: {error}") from error
        finally:
            self._rows.constraints.wait_masks()
        for item in work:
            history = self._history[item.slot]
            del history[item.start_pos :]
            history.extend(item.fed)
        return self._sample(logits, work)

    def _step_logits(self, work: Sequence[SlotWork]) -> tuple[torch.Tensor, list[int]]:
        """One row of logits per sampled position: a decode step from the static cache where it can, else packed."""
        decoder = self._decoder
        drafts = any(item.draft for item in work)  # the static step feeds one token per slot, never a draft
        if decoder is not None and not drafts and is_decode_step(work) and decoder.bucket_for(len(work)) is not None:
            slots = [item.slot for item in work]
            return decoder.step(slots, [item.tokens[0] for item in work], [item.start_pos for item in work]), slots
        return self._packed_logits(work)

    def _packed_logits(self, work: Sequence[SlotWork]) -> tuple[torch.Tensor, list[int]]:
        plan = self._steps.build(work, self.device, self._varlen)
        self._cache.plan = plan
        try:
            return self._calls.packed(self.model, plan, self._cache, self._pictures), plan.sampled_slots
        finally:
            self._cache.plan = None

    def _sample(self, logits: torch.Tensor, work: Sequence[SlotWork]) -> dict[int, list[int]]:
        """Each sampling slot's new tokens from its rows of logits (one, plus one per draft token)."""
        self._last_logits = {}
        new, self._last_logits = sample_step(logits, work, self._samplers, self._history, self._rows)
        return new

    def last_logits(self, slot: int) -> np.ndarray:
        """The logits `slot` sampled from in the last step (its last token's, after a draft), as a float32
        numpy copy: for checks."""
        if slot not in self._last_logits:
            raise RunnerError(f"Slot {slot} sampled nothing in the last step.")
        return self._last_logits[slot].float().cpu().numpy().copy()

    # ------------------------------------------------------------ extras

    def token_logprobs(self, tokens: Sequence[int]) -> list[float]:
        """log p(token_i | tokens before it) for i >= 1: perplexity checks."""
        return token_logprobs(self.model, self.device, tokens)

    def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], list[int]]:
        """Each text's unit-length vector (mean of the last hidden states) and its token count."""
        if self.model is None:
            raise RunnerError("The model was closed.")
        token_lists = [self._text.encode(text) for text in texts]
        vectors = [embed(self.model, self.device, tokens, self.context_length) for tokens in token_lists]
        return vectors, [len(tokens) for tokens in token_lists]

    def close(self) -> None:
        if self.drafter is not None:
            self.drafter.close()
            self.drafter = None
        self._rows.constraints.close()
        if self._decoder is not None:
            self._decoder.drop_graphs()  # their memory pool goes with them
        self._decoder = None
        self.model = None
        self._cache = SlotCache(0, self.slots, self.context_length, preallocate=False)
        self._loaded.model = None
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

