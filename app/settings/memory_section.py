"""The settings dialog's memory estimate: one bar of weights, KV cache and overhead against the free memory,
the sum in words, the verdict, and the change that would make it fit."""

from __future__ import annotations

from PySide6.QtWidgets import QGroupBox, QLabel, QVBoxLayout, QWidget

from app.status.memory_bar import (DRAFT_MODEL_COLOR, EMBEDDING_COLOR, KV_COLOR, OTHER_COLOR, PROMPT_COPY_COLOR,
                                  WEIGHTS_COLOR, BarPart, MemoryBar)
from engine.catalog.devices import DeviceMemory
from engine.catalog.memory import Estimate, Verdict, verdict
from engine.units import format_bytes

VERDICT_COLORS = {"fits": "#2e7d32", "tight": "#b26a00", "does not fit": "#c62828"}
HEADROOM = 1.05  # the bar's scale: a little past the larger of the estimate and the free memory


class MemorySection(QGroupBox):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Memory estimate", parent)
        self.bar = MemoryBar()
        self.bar.setMinimumHeight(22)
        self.breakdown_label = QLabel()
        self.verdict_label = QLabel()
        self.suggestion_label = QLabel()
        self.breakdown_label.setWordWrap(True)  # a repacked copy makes the line long
        layout = QVBoxLayout(self)
        for widget in (self.bar, self.breakdown_label, self.verdict_label, self.suggestion_label):
            layout.addWidget(widget)
        self.suggestion_label.hide()

    def clear(self) -> None:
        for label in (self.breakdown_label, self.verdict_label, self.suggestion_label):
            label.clear()
        self.suggestion_label.hide()
        self.bar.set_parts([], 1)
        self.bar.setToolTip("")

    def show_estimate(self, result: Estimate, memory: DeviceMemory) -> Verdict:
        """Draw and judge `result` against the memory it would live in; returns the verdict."""
        judged = verdict(result, memory.free_bytes, memory.total_bytes)
        share = result.device_bytes / max(result.total_bytes, 1)  # only what lands on this device
        parts = [BarPart("weights", result.weights_bytes, WEIGHTS_COLOR),
                 BarPart("KV cache", result.kv_cache_bytes, KV_COLOR),
                 BarPart("overhead", result.overhead_bytes, OTHER_COLOR)]
        if result.prompt_copy_bytes:
            parts.append(BarPart("F32 copy for prompts", result.prompt_copy_bytes, PROMPT_COPY_COLOR))
        if result.draft_model_bytes:  # Speculative decoding's draft model, loaded beside it
            parts.append(BarPart("draft model", result.draft_model_bytes, DRAFT_MODEL_COLOR))
        if result.embedding_bytes:  # Settings > Documents' model, loaded beside the chat model
            parts.append(BarPart("embedding model", result.embedding_bytes, EMBEDDING_COLOR))
        shown = [BarPart(part.name, int(part.size * share), part.color) for part in parts]
        scale = int(max(sum(part.size for part in shown), memory.free_bytes) * HEADROOM)
        self.bar.set_parts(shown, scale, memory.free_bytes)
        self.bar.setToolTip("\n".join(f"{part.name}: {format_bytes(part.size)}" for part in shown)
                            + f"\nfree: {format_bytes(memory.free_bytes)}")
        where = f"on {memory.name}" if result.on_gpu else "in RAM"
        repacked = f" (of it {format_bytes(result.repacked_bytes)} repacked for the CPU)" if result.repacked_bytes else ""
        self.breakdown_label.setText(" + ".join(f"<span style='color:{part.color.name()}'>&#9632;</span> "
                                                f"{part.name} {format_bytes(part.size)}"
                                                + (repacked if part.name == "weights" else "") for part in parts)
                                     + f" = {format_bytes(result.total_bytes)}; {format_bytes(result.device_bytes)} {where}"
                                     + (f", {format_bytes(result.cpu_bytes)} in RAM" if result.on_gpu else ""))
        self.verdict_label.setText(f"<b style='color:{VERDICT_COLORS[judged.level]}'>{judged.level.capitalize()}.</b> "
                                   f"{judged.message}")
        self.suggestion_label.setText(judged.suggestion)
        self.suggestion_label.setVisible(bool(judged.suggestion))  # no blank line under a model that fits
        return judged
