"""The transformers (+ bitsandbytes) runner: one packed forward pass per step over all chats.

Design (issue 5): our own batched decode over per-slot KV caches rather than
transformers' ContinuousBatchingManager. The engine's scheduler already plans
each step (prompt chunks beside decode tokens, cancel, stop strings, a cache
per chat kept across turns); the manager brings its own scheduler, thread and
request lifecycle, and forgets a request's cache when it finishes, so a chat's
next turn would re-read its whole history. Here the step plan maps onto ONE
`model(...)` call: all new tokens packed in a row, keys gathered per slot
(engine/runners/hf/cache.py), logits only where a token is sampled, and the
KV memory is exactly slots x context_length, allocated up front on a GPU.
"""

from __future__ import annotations

import gc
import inspect
from dataclasses import replace
from typing import Any, Callable, Sequence

import numpy as np
import torch

from engine.catalog.model_files import known_name
from engine.chat_template import end_markers, render_chat
from engine.detokenizer import OffsetDetokenizer
from engine.images import MARK_START
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
    Progress,
    RunnerError,
    SlotWork,
)
from engine.runners.hf.cache import SlotCache, StepPlan, build_plan, uses_varlen
from engine.runners.hf.decode import StaticDecoder, choose_decode, is_decode_step
from engine.runners.hf.embeddings import embed
from engine.runners.hf.load import Loaded, load
from engine.runners.hf.quant import attention_label, chosen_by_auto
from engine.runners.hf.rows import SampledRows
from engine.runners.hf.sampling import SlotSampler
from engine.runners.hf.text import (
    chat_template,
    encode_prompt,
    end_of_generation_ids,
    hidden_special_ids,
    single_token_ids,
    special_token_id,
    tokenizer_adds_bos,
)
from engine.runners.hf.vision import Pictures

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
        self.context_length = self._usable_context(config.context_length, text_config, notes)
        self.slots = config.slots
        self.batch_tokens = config.batch_tokens
        self.can_draft = True  # dropping a slot's tail is a change of its length (cache.py)
        self.splits_uneven_steps = False  # one padded pass whatever each slot feeds
        self._fast_decode = config.fast_decode
        static = config.fast_decode == "on" or (config.fast_decode == "auto" and self.device.type == "cuda")
        static = static and not self._varlen  # flash-attn reads cu_seqlens, not the static step's mask
        self._cache = SlotCache(
            text_config.num_hidden_layers, self.slots, self.context_length,
            preallocate=self.device.type == "cuda" or static, spare_rows=1 if static else 0,
        )
        self._decoder: StaticDecoder | None = None  # chosen after the warm-up step (_warm_up)
        self._decode_label = "eager"
        self._history: list[list[int]] = [[] for _ in range(self.slots)]  # the tokens each slot caches
        self._samplers = [SlotSampler(GREEDY) for _ in range(self.slots)]
        self._last_logits: dict[int, torch.Tensor] = {}  # slot -> the row its last token was sampled from
        self.end_markers = end_markers(chat_template(self.tokenizer))
        self._eog = end_of_generation_ids(self.model, self.tokenizer)
        self._eog |= single_token_ids(self.tokenizer, self.end_markers)
        head = self.model.get_output_embeddings()
        logits_width = int(head.weight.shape[0]) if head is not None else int(text_config.vocab_size)
        self._rows = SampledRows(self.tokenizer, logits_width, self._eog)  # masks and log-probabilities
        parameters = inspect.signature(self.model.forward).parameters
        self._cache_kwarg = "cache" if "cache" in parameters else "past_key_values"
        self._keeps_logits = "logits_to_keep" in parameters
        self._bos_wanted = tokenizer_adds_bos(self.tokenizer)
        self._loaded = loaded
        self.output_format = detect_format(chat_template(self.tokenizer), lambda text: len(
            self.tokenizer.encode(text, add_special_tokens=False)) == 1, self.tokenizer.bos_token or "",
            self.tokenizer.eos_token or "", lambda text: special_token_id(self.tokenizer, text))
        self._hidden_ids = hidden_special_ids(self.tokenizer, self.output_format.marker_texts)
        self._pictures: Pictures | None = None
        capabilities = self.output_format.capabilities
        if loaded.processor is not None:
            table_rows = int(self.model.get_input_embeddings().weight.shape[0])
            self._pictures = Pictures(self.model, loaded.processor, self.device,
                                      base=max(logits_width, table_rows, len(self.tokenizer)))
            capabilities = (*capabilities, "vision")
        self.info = replace(self._describe(config, loaded, notes), capabilities=capabilities)

    # ------------------------------------------------------------ loading

    @classmethod
    def load(cls, config: ModelConfig, progress: Progress, cancelled: Callable[[], bool]) -> HfRunner:
        if config.threads:
            torch.set_num_threads(config.threads)
        loaded = load(config, progress, cancelled)
        _check_supported(loaded)
        runner = cls(loaded, config)
        progress(0.97, "warming up")
        try:
            runner._warm_up()
        except Exception:
            runner.close()
            raise
        return_freed_memory()
        progress(1.0, "ready")
        return runner

    def _usable_context(self, requested: int, text_config: Any, notes: list[str]) -> int:
        context = requested
        if self.trained_context_length and context > self.trained_context_length:
            context = self.trained_context_length
            notes.append(f"The context was capped at {context:,} tokens per chat, the length this model was trained on.")
        window = getattr(text_config, "sliding_window", None)
        if isinstance(window, int) and 0 < window < context:
            # Our masks are full causal; beyond the window they would differ from the model's.
            context = window
            notes.append(f"The context was capped at {window:,} tokens per chat: this model only looks back that far "
                         "(its sliding window).")
        return max(16, context)

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
        kwargs: dict[str, Any] = {self._cache_kwarg: cache, "use_cache": True, "position_ids": positions,
                                  "attention_mask": mask}
        if self._keeps_logits:
            kwargs["logits_to_keep"] = 1
        return self.model(input_ids=ids, **kwargs).logits[:, -1]

    def _packed_decode_logits(self, token: int, position: int) -> torch.Tensor:
        """Today's packed step for one token of slot 0: what the decode graphs are checked against."""
        return self._packed_logits([SlotWork(0, [token], position, True)])[0][0]

    def _describe(self, config: ModelConfig, loaded: Loaded, notes: list[str]) -> ModelInfo:
        device = str(self.device)
        attention = attention_label(self._attention, self.device, loaded.dtype)
        if attention == "SDPA (flash kernel)":
            notes.append("While several chats are answered at once, attention runs on a slower kernel than for one "
                         "chat alone (PyTorch's memory-efficient one, not flash). Answers are not affected.")
        if config.flash_attention == "auto":
            attention = chosen_by_auto(attention)
        if self.device.type == "cuda":
            device = f"{device} ({torch.cuda.get_device_name(self.device)})"
        return ModelInfo(
            name=known_name(loaded.source.folder / loaded.source.gguf_file if loaded.source.gguf_file
                            else loaded.source.folder),
            path=config.path,
            backend="hf",
            device=device,
            quantization=loaded.quantization,
            attention=attention,
            context_length=self.context_length,
            slots=self.slots,
            model_bytes=int(self.model.get_memory_footprint()),
            kv_cache_bytes=self.kv_cache_bytes(),
            gpu_offload=self.device.type == "cuda",
            trained_context_length=self.trained_context_length,
            n_params=int(self.model.num_parameters()),
            has_chat_template=chat_template(self.tokenizer) is not None,
            notes=tuple(notes),
        )

    def _describe_update(self) -> ModelInfo:
        return replace(self.info, kv_cache_bytes=self.kv_cache_bytes(), decode=self._decode_label)

    # ------------------------------------------------------------ text

    def render_chat(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = (),
                    options: Sequence[tuple[str, str]] = ()) -> str:
        if self._pictures is not None:  # each picture becomes a marker that tokenize() expands
            messages = self._pictures.render(messages)
        return render_chat(chat_template(self.tokenizer), messages, self.tokenizer.bos_token or "",
                           self.tokenizer.eos_token or "", tools, options)

    def tokenize(self, text: str) -> list[int]:
        if self._pictures is not None and MARK_START in text:
            return self._pictures.tokenize(
                text, lambda piece, first: encode_prompt(self.tokenizer, piece, self._bos_wanted and first))
        return encode_prompt(self.tokenizer, text, self._bos_wanted)

    def detokenizer(self) -> OffsetDetokenizer:
        # Special tokens render as nothing, but the markers the parser reads (<think>, <tool_call> ...).
        hidden = self._hidden_ids
        return OffsetDetokenizer(lambda ids: self.tokenizer.decode([i for i in ids if i not in hidden]))

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

    def step_logprobs(self, slot: int) -> list[TokenLogprob]:
        return self._rows.entries.get(slot, [])

    def remove_from(self, slot: int, position: int) -> bool:
        del self._history[slot][max(0, position):]
        return True

    def copy_prefix(self, source: int, target: int, length: int) -> bool:
        """Copy the K/V rows of `source`'s first `length` positions into `target` (a system prompt
        shared by several chats is computed once); False when `source` does not hold that many."""
        if source == target or not 0 <= length <= len(self._history[source]):
            return False
        with torch.inference_mode():
            self._cache.copy_prefix(source, target, length)
        self._history[target] = self._history[source][:length]
        return True

    def clear_slot(self, slot: int) -> None:
        self._history[slot] = []

    def kv_cache_bytes(self) -> int:
        return self._cache.nbytes()

    # ------------------------------------------------------------ the step

    def forward(self, work: Sequence[SlotWork]) -> dict[int, list[int]]:
        if not work:
            return {}
        self._validate(work)
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
        plan = build_plan(work, self.device, self._varlen)
        self._cache.plan = plan
        try:
            return self._run(plan), plan.sampled_slots
        finally:
            self._cache.plan = None

    def _sample(self, logits: torch.Tensor, work: Sequence[SlotWork]) -> dict[int, list[int]]:
        """Each sampling slot's new tokens from its rows of logits (one, plus one per draft token)."""
        sampling = [item for item in work if item.sample]
        samplers = [self._samplers[item.slot] for item in sampling]
        self._rows.prepare(logits, sampling)
        if not any(item.draft for item in sampling) and all(
                s.params.greedy and s.params.repeat_penalty == 1.0 for s in samplers):
            # one argmax and one copy to the host for all chats, not one per chat
            self._last_logits = {item.slot: logits[row] for row, item in enumerate(sampling)}
            picked = logits.float().argmax(dim=-1).tolist()
            for row, (item, token) in enumerate(zip(sampling, picked)):
                self._rows.finish(item.slot, [int(token)], logits[row : row + 1])
            return {item.slot: [int(token)] for item, token in zip(sampling, picked)}
        new: dict[int, list[int]] = {}
        self._last_logits = {}
        first = 0
        for item in sampling:
            rows = logits[first : first + 1 + len(item.draft)]
            new[item.slot] = self._sample_and_verify(item, rows)
            first += len(rows)
        return new

    def _sample_and_verify(self, item: SlotWork, rows: torch.Tensor) -> list[int]:
        """Sample after the last token, then after each draft token while the draft agrees: each
        sample sees the history (repeat penalty) and the generator state that generating one token
        per step would give it, so drafts change how fast an answer comes, never what it is."""
        sampler, history = self._samplers[item.slot], self._history[item.slot]
        context_end = item.start_pos + len(item.tokens)  # the tokens row 0 has seen
        tokens: list[int] = []
        for offset, guess in enumerate([*item.draft, None]):
            end = context_end + offset
            token = sampler.sample(rows[offset], history[max(0, end - PENALTY_LAST_N) : end])
            tokens.append(token)
            if token != guess:
                break
        self._last_logits[item.slot] = rows[len(tokens) - 1]
        self._rows.finish(item.slot, tokens, rows)
        return tokens

    def last_logits(self, slot: int) -> np.ndarray:
        """The logits `slot` sampled from in the last step (its last token's, after a draft), as a float32
        numpy copy: for checks."""
        if slot not in self._last_logits:
            raise RunnerError(f"Slot {slot} sampled nothing in the last step.")
        return self._last_logits[slot].float().cpu().numpy().copy()

    def _validate(self, work: Sequence[SlotWork]) -> None:
        if len({item.slot for item in work}) != len(work):
            raise RunnerError("one step named the same slot twice")
        for item in work:
            if not 0 <= item.slot < self.slots or not item.tokens or (item.draft and not item.sample):
                raise RunnerError(f"bad step item for slot {item.slot} ({len(item.tokens)} tokens)")
            cached = len(self._history[item.slot])
            if item.start_pos > cached:
                raise RunnerError(
                    f"slot {item.slot}: step starts at position {item.start_pos}, but only {cached} are cached"
                )
            if item.start_pos + len(item.fed) > self.context_length:
                raise CacheFull(f"the chat is longer than the context of {self.context_length} tokens")

    def _run(self, plan: StepPlan) -> torch.Tensor:
        mask = plan.mask
        if mask is not None and self._attention == "eager":
            # eager attention adds the mask to the scores
            floor = torch.finfo(self._loaded.dtype).min
            mask = torch.zeros(mask.shape, dtype=self._loaded.dtype, device=mask.device).masked_fill(~mask, floor)
        kwargs: dict[str, Any] = {
            self._cache_kwarg: self._cache,
            "use_cache": True,
            "position_ids": plan.position_ids,
            "attention_mask": mask,
            **plan.flash_kwargs,
        }
        if self._keeps_logits:
            kwargs["logits_to_keep"] = plan.logits_index if plan.logits_index is not None else 1
        pictures = self._pictures
        if pictures is not None and bool((plan.input_ids >= pictures.base).any()):
            inputs: dict[str, torch.Tensor] = {"inputs_embeds": pictures.embed(plan.input_ids)}
        else:
            inputs = {"input_ids": plan.input_ids}
        logits = self.model(**inputs, **kwargs).logits[0]
        if not self._keeps_logits and plan.logits_index is not None:
            logits = logits[plan.logits_index]
        return logits

    # ------------------------------------------------------------ extras

    def token_logprobs(self, tokens: Sequence[int]) -> list[float]:
        """log p(token_i | tokens before it) for i >= 1: perplexity checks."""
        ids = torch.tensor([list(tokens)], dtype=torch.long, device=self.device)
        with torch.inference_mode():
            logits = self.model(input_ids=ids, use_cache=False).logits[0, :-1].float()
        picked = torch.log_softmax(logits, dim=-1).gather(1, ids[0, 1:, None])
        return [float(x) for x in picked[:, 0].tolist()]

    def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], list[int]]:
        """Each text's unit-length vector (mean of the last hidden states) and its token count."""
        if self.model is None:
            raise RunnerError("The model was closed.")
        token_lists = [encode_prompt(self.tokenizer, text, self._bos_wanted) for text in texts]
        vectors = [embed(self.model, self.device, tokens, self.context_length) for tokens in token_lists]
        return vectors, [len(tokens) for tokens in token_lists]

    def close(self) -> None:
        if self._decoder is not None:
            self._decoder.drop_graphs()  # their memory pool goes with them
        self._decoder = None
        self.model = None
        self._cache = SlotCache(0, self.slots, self.context_length, preallocate=False)
        self._loaded.model = None
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()


def _check_supported(loaded: Loaded) -> None:
    text_config = loaded.model.config.get_text_config()
    layer_types = set(getattr(text_config, "layer_types", None) or ())
    unsupported = layer_types - {"full_attention", "sliding_attention"}
    if unsupported:
        raise RunnerError(
            f"{loaded.source.name}: layers of type {sorted(unsupported)} keep a recurrent state, which Hearth's "
            "batched transformers runner does not handle yet. A GGUF of this model may run with llama.cpp."
        )


def return_freed_memory() -> None:
    """Give the OS back what loading freed (glibc keeps it otherwise: 100-300 MiB after a 4-bit load of a
    135M model, seen in tests/engine/catalog/test_memory_hf.py), so the gauge shows what the model uses."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, Windows, musl): their allocators return memory themselves
        pass
