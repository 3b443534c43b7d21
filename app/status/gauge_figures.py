"""What the gauge says: its figures (device, memory split into parts, speed, slots, drafts) and the
details table for its tooltip and popup, from one reading of the model, the engine's stats and memory.

Plain values in, text out: the widget (app/status/gauge.py) takes a reading on every stats event and
draws it; nothing here touches Qt widgets.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from app.bridge import EngineStats, ModelInfo
from app.status.memory_bar import (
    DRAFT_MODEL_COLOR,
    EMBEDDING_COLOR,
    KV_COLOR,
    OTHER_COLOR,
    PROMPT_COPY_COLOR,
    VOICE_COLOR,
    WEIGHTS_COLOR,
    BarPart,
)
from app.status.memory_probe import MemorySnapshot
from app.status.models_rows import (
    embedding_models,
    embedding_rows,
    estimate_text,
    model_rows,
    voice_models,
    voice_rows,
)
from engine.units import format_bytes

DRAFT_SOURCES = {"lookup": "prompt lookup", "pool": "shared n-gram pool", "draft": "draft model"}  # the engine's draft sources, as shown
Titles = Callable[[str], str]  # chat id -> tab title
# Two sentences: the details popup shows them on two lines, the welcome text as one paragraph.
NO_CHAT_TEMPLATE = ("This model has no chat template, so Hearth lays the chat out in a generic ChatML form.",
                    "It is likely a base model, which continues text rather than answering.")


@dataclass(frozen=True)
class GaugeReading:
    """The gauge's inputs at one moment; every figure and line of the details comes from these."""

    model: ModelInfo | None
    stats: EngineStats | None
    memory: MemorySnapshot | None
    titles: Titles
    api_url: str = ""  # the local API on this engine, if serving
    api_in_flight: int = 0
    model_infos: Callable[[], Mapping[str, ModelInfo]] = dict  # every loaded model (the window's bridge)

    @property
    def remote(self) -> bool:
        return self.model is not None and self.model.backend == "remote"

    @property
    def latency_text(self) -> str:
        latency = self.stats.latency_ms if self.stats else 0.0
        return f"{latency:.0f} ms" if latency else "not measured yet"

    @property
    def device_name(self) -> str:
        if self.model is None:
            return "no model"
        if self.remote:
            return "remote"
        if self.model.gpu_offload and self.memory is not None and self.memory.kind == "VRAM":
            return f"GPU {self.memory.device}"
        return "CPU" if self.model.device.lower().startswith("cpu") else self.model.device

    @property
    def tokens_per_second(self) -> float:
        return self.stats.tokens_per_second if self.stats else 0.0

    def memory_parts(self) -> tuple[list[BarPart], int, str]:
        memory, model = self.memory, self.model
        if memory is None or model is None:
            return [], 1, ""
        weights = self.stats.model_bytes if self.stats else model.model_bytes
        kv = self.stats.kv_cache_bytes if self.stats else model.kv_cache_bytes
        if memory.kind == "VRAM":  # the whole card: what others use counts against us too
            used, total = memory.used_bytes, memory.total_bytes
            text = f"VRAM {format_bytes(used)} / {format_bytes(total)}"
        else:
            used = total = memory.process_bytes
            text = f"RAM {format_bytes(used)}"
        text += f" (model {format_bytes(weights)}, KV {format_bytes(kv)})"
        parts = [BarPart("model", weights, WEIGHTS_COLOR), BarPart("KV cache", kv, KV_COLOR)]
        rest = max(used - weights - kv, 0)
        if model.prompt_copy_bytes and memory.kind != "VRAM":  # mapped: resident as far as prompts touched it
            copy = min(model.prompt_copy_bytes, rest)
            parts.append(BarPart("F32 copy for prompts", copy, PROMPT_COPY_COLOR))
            rest -= copy
        if model.draft_model_bytes:  # its weights and cache, where the model's are (RAM or the card)
            draft = min(model.draft_model_bytes, rest)
            parts.append(BarPart(f"draft model {model.draft_model}", draft, DRAFT_MODEL_COLOR))
            rest -= draft
        if memory.kind != "VRAM":  # the documents' embedding model lives in this process's RAM
            embedding = min(sum(size for _, size in embedding_models()), rest)
            if embedding:
                parts.append(BarPart("embedding model", embedding, EMBEDDING_COLOR))
                rest -= embedding
            voice = min(sum(size for _, _, size in voice_models()), rest)  # on the CPU whatever the model is on
            if voice:
                parts.append(BarPart("voice models", voice, VOICE_COLOR))
                rest -= voice
        parts.append(BarPart("other", rest, OTHER_COLOR))
        return parts, total, text

    def model_summary(self, name_chars: int = 200) -> str:
        model = self.model
        if model is None:
            return ""
        backend = {"llamacpp": "llama.cpp", "hf": "transformers"}.get(model.backend, model.backend)
        name = model.name if len(model.name) <= name_chars else model.name[: name_chars - 1] + "…"
        return " · ".join(part for part in (name, backend, model.quantization, model.attention) if part)

    def details_html(self) -> str:
        """Everything the gauge knows, for the tooltip and the popup."""
        if self.model is None:
            return "No model is loaded."
        if self.remote:
            return _table(self._remote_rows())
        parts, _, text = self.memory_parts()
        shares = ", ".join(f"{part.name} {format_bytes(part.size)}" for part in parts) or "model ?, KV cache ?, other ?"
        rows = [
            ("Device", html.escape(self.model.device)),
            ("Memory", f"{text.split(' (')[0]}: {shares}"),
            *([("Estimated", estimate_text(self.model))] if estimate_text(self.model) else []),
            *embedding_rows(),
            *voice_rows(),
            ("Speed", f"{self.tokens_per_second:.1f} tok/s in total"),
            *self._per_chat_rows(),
            ("Speculative", self._drafts_text()),
            ("Slots", f"{self.slots_text()} busy"),
            *self._api_rows(),
            ("Model", html.escape(self.model_summary())),
            ("Context", f"{self.model.context_length} tokens per chat"),
        ]
        if self.model.metadata_name and self.model.metadata_name != self.model.name:
            rows.append(("Name in the file", html.escape(self.model.metadata_name)))
        if self.model.decode:
            rows.append(("Decode", html.escape(self.model.decode)))
        if self.model.prompt_reading:
            rows.append(("Prompts", html.escape(self.model.prompt_reading)))
        if not self.model.has_chat_template:
            rows.append(("Chat template", "<br>".join(html.escape(line) for line in NO_CHAT_TEMPLATE)))
        rows += [("Note", html.escape(note)) for note in self.model.notes]
        if self.stats is not None and len(self.stats.models) > 1:
            rows += [("Loaded models", f"{len(self.stats.models)}"), *model_rows(self.stats, self.model_infos(), self.titles)]
        return _table(rows)

    def _remote_rows(self) -> list[tuple[str, str]]:
        assert self.model is not None
        context = f"{self.model.context_length} tokens" if self.model.context_length else "as the server decides"
        return [
            ("Backend", "remote: an OpenAI-compatible server answers; nothing runs on this computer"),
            ("Server", html.escape(self.model.path)),
            ("Latency", f"{self.latency_text} to answer the last request"),
            ("Model", html.escape(self.model.name)),
            ("Speed", f"{self.tokens_per_second:.1f} tok/s in total, as received here"),
            *self._per_chat_rows(),
            ("Streams", f"{self.stats.slots_busy if self.stats else 0} open"),
            *self._api_rows(),
            ("Context", context),
        ]

    def _api_rows(self) -> list[tuple[str, str]]:
        if not self.api_url:
            return []
        return [("Local API", f"{html.escape(self.api_url)}: {self.api_in_flight} requests in flight")]

    def _drafts_text(self) -> str:
        stats = self.stats
        if stats is None or stats.acceptance is None:
            return "no drafts in the last few seconds"
        parts = [f"{DRAFT_SOURCES.get(source, source)}: {accepted / drafted:.0%} of {drafted} drafted tokens accepted"
                 for source, drafted, accepted in stats.drafts_by_source if drafted]
        return "<br>".join(parts) or f"{stats.acceptance:.0%} of {stats.drafted_tokens} drafted tokens accepted"

    def slots_text(self) -> str:
        if self.stats is not None:
            return f"{self.stats.slots_busy}/{self.stats.slots_total}"
        return f"0/{self.model.slots if self.model else 0}"

    def _per_chat_rows(self) -> list[tuple[str, str]]:
        speeds = self.stats.chat_tokens_per_second if self.stats else ()
        return [(f"&nbsp;&nbsp;{html.escape(self.titles(chat))}", f"{speed:.1f} tok/s") for chat, speed in speeds]


def _table(rows: list[tuple[str, str]]) -> str:
    cells = "".join(f"<tr><td><b>{k}</b>&nbsp;&nbsp;</td><td>{v}</td></tr>" for k, v in rows)
    return f"<table>{cells}</table>"
