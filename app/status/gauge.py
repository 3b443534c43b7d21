"""The gauge in the status bar: device, memory (model and KV cache parts), tokens/s, slots, model.

With a remote backend there is no local memory to show: it says "remote", the
server, its latency (its time to answer the last request, measured here) and
the model instead.

It is driven by the engine's stats events (several a second while anything
runs) and costs nothing when idle: the only timer keeps the 60 s sparkline
scrolling and stops once the last minute holds no speed at all.
"""

from __future__ import annotations

import html
import time
from collections import deque
from typing import Callable, Mapping

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import QMouseEvent, QPainter, QPainterPath, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QWidget

from app.bridge import EngineStats, ModelInfo
from app.status.elided_label import ElidedLabel
from app.status.memory_bar import KV_COLOR, OTHER_COLOR, PROMPT_COPY_COLOR, WEIGHTS_COLOR, BarPart, MemoryBar
from app.status.memory_probe import MemorySnapshot, gpu_index_of, snapshot
from app.status.models_rows import compact_text, model_rows
from engine.units import format_bytes

HISTORY_S = 60.0
MODEL_NAME_CHARS = 18
Titles = Callable[[str], str]  # chat id -> tab title
# Two sentences: the details popup shows them on two lines, the welcome text as one paragraph.
NO_CHAT_TEMPLATE = ("This model has no chat template, so Hearth lays the chat out in a generic ChatML form.",
                    "It is likely a base model, which continues text rather than answering.")


class Sparkline(QWidget):
    """Tokens/s over the last 60 seconds, newest at the right."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.samples: deque[tuple[float, float]] = deque()
        self.setFixedSize(90, 18)
        self.setToolTip("tokens/s, last 60 s")

    def add(self, value: float, now: float) -> None:
        self.samples.append((now, value))
        while self.samples and now - self.samples[0][0] > HISTORY_S:
            self.samples.popleft()
        self.update()

    def has_recent_speed(self, now: float) -> bool:
        return any(value > 0 and now - t <= HISTORY_S for t, value in self.samples)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(self.palette().color(QPalette.ColorRole.Mid), 1))
        painter.drawRect(QRectF(0.5, 0.5, self.width() - 1, self.height() - 1))
        if not self.samples:
            return
        now, top = time.monotonic(), max(max(v for _, v in self.samples), 1.0)
        width, height = self.width() - 2, self.height() - 3
        path = QPainterPath()
        for i, (t, value) in enumerate(self.samples):
            point = QPointF(1 + width * (1 - (now - t) / HISTORY_S), 1.5 + height * (1 - value / top))
            path.moveTo(point) if i == 0 else path.lineTo(point)
        painter.setPen(QPen(self.palette().color(QPalette.ColorRole.Highlight), 1.5))
        painter.drawPath(path)


class GaugeWidget(QFrame):
    """Always visible in the status bar; click it for the details popup."""

    def __init__(self, titles: Titles, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._titles = titles
        self.model: ModelInfo | None = None
        self.stats: EngineStats | None = None
        self.memory: MemorySnapshot | None = None
        self.api_url, self.api_in_flight = "", 0  # the local API on this engine, if serving
        self.model_infos: Callable[[], Mapping[str, ModelInfo]] = dict  # every loaded model (the window's bridge)
        self.device_label, self.memory_label = QLabel("no model"), QLabel()
        self.speed_label, self.slots_label, self.model_label = QLabel(), QLabel(), ElidedLabel()
        self.draft_label = QLabel()  # speculative decoding's acceptance, while drafts are being made
        self.draft_label.setToolTip("prompt-lookup drafts accepted, last few seconds")
        self.memory_bar, self.sparkline = MemoryBar(self), Sparkline(self)
        self.memory_bar.setFixedSize(80, 12)
        self.device_label.setObjectName("gaugeDevice")
        self._popup: QLabel | None = None
        self._scroll_timer = QTimer(self, interval=1000)  # the sparkline keeps moving after work stops
        self._scroll_timer.timeout.connect(self._on_scroll_tick)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        layout.setSpacing(8)
        for widget in (self.device_label, self.memory_bar, self.memory_label, self.sparkline,
                       self.speed_label, self.draft_label, self.slots_label, self.model_label):  # fmt: skip
            layout.addWidget(widget)
        layout.setStretchFactor(self.model_label, 1)  # the one part that gives way when room is short
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self._refresh_labels()

    # ------------------------------------------------------------ inputs

    def set_model(self, info: ModelInfo | None) -> None:
        self.model = info
        self.stats = None
        self._probe_memory()
        self._refresh_labels()

    def set_api(self, url: str, in_flight: int) -> None:
        """The local API's address and its requests in flight ("" : not serving)."""
        self.api_url, self.api_in_flight = url, in_flight
        self._refresh_labels()

    def update_stats(self, stats: EngineStats) -> None:
        self.stats = stats
        now = time.monotonic()
        self.sparkline.add(stats.tokens_per_second, now)
        self._probe_memory()
        self._refresh_labels()
        if self.sparkline.has_recent_speed(now) and not self._scroll_timer.isActive():
            self._scroll_timer.start()

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

    # ------------------------------------------------------------ rendering

    def _probe_memory(self) -> None:
        if self.model is None or self.remote:
            self.memory = None
            return
        self.memory = snapshot(self.model.gpu_offload, gpu_index_of(self.model.device))

    def _memory_parts(self) -> tuple[list[BarPart], int, str]:
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
        parts.append(BarPart("other", rest, OTHER_COLOR))
        return parts, total, text

    def _refresh_labels(self) -> None:
        for widget in (self.memory_bar, self.memory_label, self.sparkline, self.speed_label, self.slots_label):
            widget.setVisible(self.model is not None)
        parts, total, text = self._memory_parts()
        self.memory_bar.set_parts(parts, total)
        self.memory_bar.setVisible(self.model is not None and not self.remote)
        self.device_label.setText(self.device_name)
        if self.model is not None and self.remote:
            text = f"{self.model.path} · latency {self.latency_text}"
        self.memory_label.setText(text)
        self.speed_label.setText(f"{self.tokens_per_second:.1f} tok/s")
        acceptance = self.stats.acceptance if self.stats else None
        self.draft_label.setVisible(self.model is not None and acceptance is not None)
        self.draft_label.setText(f"drafts {acceptance:.0%}" if acceptance is not None else "")
        self.slots_label.setText(f"slots {self._slots_text()}" + (f" · API {self.api_in_flight}" if self.api_url else ""))
        several = compact_text(self.stats)  # more than one model: their count and memory instead of one name
        self.model_label.setText(several or self._model_summary(name_chars=MODEL_NAME_CHARS))  # the popup has it all
        details = self.details_html()
        self.setToolTip(details)
        if self._popup is not None and self._popup.isVisible():
            self._popup.setText(details)

    def _model_summary(self, name_chars: int = 200) -> str:
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
        parts, _, text = self._memory_parts()
        shares = ", ".join(f"{part.name} {format_bytes(part.size)}" for part in parts) or "model ?, KV cache ?, other ?"
        rows = [
            ("Device", html.escape(self.model.device)),
            ("Memory", f"{text.split(' (')[0]}: {shares}"),
            ("Speed", f"{self.tokens_per_second:.1f} tok/s in total"),
            *self._per_chat_rows(),
            ("Speculative", self._drafts_text()),
            ("Slots", f"{self._slots_text()} busy"),
            *self._api_rows(),
            ("Model", html.escape(self._model_summary())),
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
            rows += [("Loaded models", f"{len(self.stats.models)}"), *model_rows(self.stats, self.model_infos(), self._titles)]
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
        return f"prompt lookup: {stats.acceptance:.0%} of {stats.drafted_tokens} drafted tokens accepted"

    def _slots_text(self) -> str:
        if self.stats is not None:
            return f"{self.stats.slots_busy}/{self.stats.slots_total}"
        return f"0/{self.model.slots if self.model else 0}"

    def _per_chat_rows(self) -> list[tuple[str, str]]:
        speeds = self.stats.chat_tokens_per_second if self.stats else ()
        return [(f"&nbsp;&nbsp;{html.escape(self._titles(chat))}", f"{speed:.1f} tok/s") for chat, speed in speeds]

    def _on_scroll_tick(self) -> None:
        self.sparkline.update()
        if not self.sparkline.has_recent_speed(time.monotonic()):
            self._scroll_timer.stop()

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        self.show_details()

    def show_details(self) -> None:
        """A popup under the mouse with the full details, live while open."""
        if self._popup is None:
            self._popup = QLabel(self, Qt.WindowType.Popup)
            self._popup.setMargin(10)
            self._popup.setTextFormat(Qt.TextFormat.RichText)
            self._popup.setWordWrap(True)  # a long value (a file's path, the GPU note) wraps in its cell
        self._popup.setText(self.details_html())
        self._popup.setMaximumWidth(16777215)  # measure the unwrapped width, then wrap to at most the cap
        width = min(self._popup.sizeHint().width(), POPUP_MAX_WIDTH)
        self._popup.setMaximumWidth(POPUP_MAX_WIDTH)
        # resize, not adjustSize: that caps a top-level window at 2/3 of the screen and cuts the rest
        self._popup.resize(width, self._popup.heightForWidth(width))
        corner = self.mapToGlobal(self.rect().topRight())
        top = self.screen().availableGeometry().top()  # many models: it starts at the screen's top, not above it
        self._popup.move(corner.x() - self._popup.width(), max(top, corner.y() - self._popup.height() - 4))
        self._popup.show()


POPUP_MAX_WIDTH = 640  # px; wider values wrap


def _table(rows: list[tuple[str, str]]) -> str:
    cells = "".join(f"<tr><td><b>{k}</b>&nbsp;&nbsp;</td><td>{v}</td></tr>" for k, v in rows)
    return f"<table>{cells}</table>"
