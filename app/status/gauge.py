"""The gauge in the status bar: device, memory (model and KV cache parts), tokens/s, slots, model.

With a remote backend there is no local memory to show: it says "remote", the
server, its latency (its time to answer the last request, measured here) and
the model instead.

It is driven by the engine's stats events (several a second while anything
runs) and costs nothing when idle: the only timer keeps the 60 s sparkline
scrolling and stops once the last minute holds no speed at all.

This module lays the gauge out and keeps it live; what it says (the memory split, the speed and
slots, the details table) is app/status/gauge_figures.py's, the sparkline app/status/sparkline.py's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QWidget

from app.bridge import EngineStats, ModelInfo
from app.status.elided_label import ElidedLabel
from app.status.gauge_figures import NO_CHAT_TEMPLATE, GaugeReading, Titles
from app.status.memory_bar import MemoryBar
from app.status.memory_probe import MemorySnapshot, gpu_index_of, snapshot
from app.status.models_rows import compact_text
from app.status.sparkline import Sparkline

__all__ = ["MODEL_NAME_CHARS", "NO_CHAT_TEMPLATE", "POPUP_MAX_WIDTH", "GaugeWidget", "Titles"]

MODEL_NAME_CHARS = 18


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
        self.draft_label.setToolTip("drafted tokens accepted (prompt lookup and the shared n-gram pool), last few seconds")
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

    def reading(self) -> GaugeReading:
        """What the gauge shows now, as plain values (app/status/gauge_figures.py)."""
        return GaugeReading(self.model, self.stats, self.memory, self._titles, self.api_url, self.api_in_flight,
                            self.model_infos)

    @property
    def remote(self) -> bool:
        return self.reading().remote

    @property
    def device_name(self) -> str:
        return self.reading().device_name

    @property
    def tokens_per_second(self) -> float:
        return self.reading().tokens_per_second

    # ------------------------------------------------------------ rendering

    def _probe_memory(self) -> None:
        if self.model is None or self.remote:
            self.memory = None
            return
        self.memory = snapshot(self.model.gpu_offload, gpu_index_of(self.model.device))

    def _refresh_labels(self) -> None:
        reading = self.reading()
        for widget in (self.memory_bar, self.memory_label, self.sparkline, self.speed_label, self.slots_label):
            widget.setVisible(self.model is not None)
        parts, total, text = reading.memory_parts()
        self.memory_bar.set_parts(parts, total)
        self.memory_bar.setVisible(self.model is not None and not reading.remote)
        self.device_label.setText(reading.device_name)
        if self.model is not None and reading.remote:
            text = f"{self.model.path} · latency {reading.latency_text}"
        self.memory_label.setText(text)
        self.speed_label.setText(f"{reading.tokens_per_second:.1f} tok/s")
        acceptance = self.stats.acceptance if self.stats else None
        self.draft_label.setVisible(self.model is not None and acceptance is not None)
        self.draft_label.setText(f"drafts {acceptance:.0%}" if acceptance is not None else "")
        self.slots_label.setText(f"slots {reading.slots_text()}" + (f" · API {self.api_in_flight}" if self.api_url else ""))
        several = compact_text(self.stats)  # more than one model: their count and memory instead of one name
        self.model_label.setText(several or reading.model_summary(name_chars=MODEL_NAME_CHARS))  # the popup has it all
        details = reading.details_html()
        self.setToolTip(details)
        if self._popup is not None and self._popup.isVisible():
            self._popup.setText(details)

    def details_html(self) -> str:
        """Everything the gauge knows, for the tooltip and the popup."""
        return self.reading().details_html()

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
