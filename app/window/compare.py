"""Compare…: one message to two or more models, answered side by side and streaming at once.

Each pane is its own chat in the engine naming its model (app/chat/compare_pane.py); a model that is
not loaded is loaded beside the others first (the pane says so meanwhile) and its pane starts when
it is ready. "Continue this one" opens that pane's question and answer as a normal chat tab on its model.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QDialog, QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPlainTextEdit, QPushButton,
                               QSplitter, QVBoxLayout, QWidget)

from app.bridge import ChatMessage, EngineBridge, EngineStats, ModelInfo, SamplingParams
from app.chat.compare_pane import ComparePane
from app.window.tab_models import TabModels

PATH_ROLE = Qt.ItemDataRole.UserRole
Defaults = Callable[[], tuple[SamplingParams, str]]


class CompareDialog(QDialog):
    continue_requested = Signal(str, list)  # model path, the conversation to open as a chat

    def __init__(self, bridge: EngineBridge, models: TabModels, defaults: Defaults, panes: dict[str, ComparePane],
                 chosen: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Compare models")
        self.resize(1100, 640)
        self.bridge, self.models, self._defaults = bridge, models, defaults
        self.panes_by_chat = panes  # the window routes the panes' events through it
        self.panes: list[ComparePane] = []
        self._waiting: dict[str, ComparePane] = {}  # chat id -> pane whose model is loading
        self._chosen = list(chosen)
        self.model_list = QListWidget()
        self.model_list.setFlow(QListWidget.Flow.LeftToRight)
        self.model_list.setWrapping(True)
        self.model_list.setMaximumHeight(self.fontMetrics().lineSpacing() * 4)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.input = QPlainTextEdit()
        self.input.setPlaceholderText("One message, sent to every model ticked above")
        self.input.setFixedHeight(self.input.fontMetrics().lineSpacing() * 3 + 14)
        self.hint = QLabel()
        self.hint.setProperty("role", "hint")
        self.send_button = QPushButton("Send to all")
        self.send_button.setProperty("accent", True)
        self.send_button.clicked.connect(self.send)
        self.stop_button = QPushButton("Stop")
        self.stop_button.clicked.connect(self.stop)
        row = QHBoxLayout()
        row.addWidget(self.hint, 1)
        row.addWidget(self.stop_button)
        row.addWidget(self.send_button)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Models to compare"))
        layout.addWidget(self.model_list)
        layout.addWidget(self.splitter, 1)
        layout.addWidget(self.input)
        layout.addLayout(row)
        models.library_changed.connect(self._fill_models)
        bridge.model_loaded.connect(self._on_model_loaded)
        bridge.model_failed_at.connect(self._on_model_failed)
        bridge.stats_updated.connect(self._on_stats)
        self.finished.connect(lambda _result: self._close_panes())
        self._fill_models()
        models.look_for_models()

    def _fill_models(self) -> None:
        checked = self.checked_paths() if self.model_list.count() else self._chosen
        self.model_list.clear()
        offered = [(m.path, m.name + (f" — {m.level}" if m.level else "")) for m in self.models.library]
        for path in self._chosen + list(self.bridge.loaded_models):
            if path and path not in {p for p, _ in offered}:
                offered.insert(0, (path, self.models.name_of(path)))
        for path, label in offered:
            item = QListWidgetItem(label)
            item.setData(PATH_ROLE, path)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if path in checked else Qt.CheckState.Unchecked)
            self.model_list.addItem(item)

    def checked_paths(self) -> list[str]:
        items = (self.model_list.item(i) for i in range(self.model_list.count()))
        return [item.data(PATH_ROLE) for item in items if item.checkState() == Qt.CheckState.Checked]

    def set_checked(self, paths: list[str]) -> None:
        for i in range(self.model_list.count()):
            item = self.model_list.item(i)
            item.setCheckState(Qt.CheckState.Checked if item.data(PATH_ROLE) in paths else Qt.CheckState.Unchecked)

    # ------------------------------------------------------------ sending

    def send(self) -> None:
        question, paths = self.input.toPlainText().strip(), self.checked_paths()
        if not question or len(paths) < 2:
            self.hint.setText("Tick two or more models and write a message.")
            return
        if any(pane.answering for pane in self.panes):
            return
        self.hint.clear()
        self.input.clear()
        self._close_panes()
        for path in paths:
            pane = ComparePane(path, self.models.name_of(path))
            pane.continue_requested.connect(lambda pane: self.continue_requested.emit(pane.path, pane.conversation()))
            self.panes.append(pane)
            self.panes_by_chat[pane.chat_id] = pane
            self.splitter.addWidget(pane)
            self.bridge.set_chat_model(pane.chat_id, path)
            pane.begin(question)
            if path in self.bridge.loaded_models:
                self._submit(pane)
            else:
                self._waiting[pane.chat_id] = pane
                pane.wait(f"Loading {pane.name}…")
                if path not in self.bridge.loading_models:
                    self.models.lifecycle.elsewhere.add(path)
                    self.models.load(path)

    def _submit(self, pane: ComparePane) -> None:
        sampling, system_prompt = self._defaults()
        messages = ([ChatMessage("system", system_prompt)] if system_prompt else []) + [ChatMessage("user", pane.question)]
        info = self.bridge.loaded_models.get(pane.path)
        if info is not None:
            pane.set_memory(info.model_bytes + info.kv_cache_bytes + info.prompt_copy_bytes)
        self.bridge.submit(pane.chat_id, messages, sampling)

    def stop(self) -> None:
        for pane in self.panes:
            if pane.answering:
                self.bridge.cancel(pane.chat_id)

    def _on_model_loaded(self, info: ModelInfo) -> None:
        for chat_id, pane in list(self._waiting.items()):
            if pane.path == info.path:
                del self._waiting[chat_id]
                pane.view.setPlainText("…")
                self._submit(pane)

    def _on_model_failed(self, path: str, message: str) -> None:
        for chat_id, pane in list(self._waiting.items()):
            if pane.path == path:
                del self._waiting[chat_id]
                pane.answering = False
                pane.on_chat_error(f"{pane.name} could not be loaded: {message}")

    def _on_stats(self, stats: EngineStats) -> None:
        by_path = {model.path: model for model in stats.models}
        for pane in self.panes:
            if (model := by_path.get(pane.path)) is not None:
                pane.set_memory(model.model_bytes + model.kv_cache_bytes + model.prompt_copy_bytes)

    def _close_panes(self) -> None:
        for pane in self.panes:
            self.bridge.close_chat(pane.chat_id)
            self.panes_by_chat.pop(pane.chat_id, None)
            pane.setParent(None)
            pane.deleteLater()
        self.panes.clear()
        self._waiting.clear()
