"""Compare…: one message to two or more models, answered side by side and streaming at once.

Each pane is its own chat in the engine naming its model (app/chat/compare_pane.py); a model that is
not loaded is loaded beside the others first (the pane says so meanwhile) and its pane starts when
it is ready. The next message sent goes to every pane, each continuing its own conversation, until the
ticked models change or "New comparison" is pressed. A comparison is stored as one chat in the history
(app/history/comparison.py) as it happens; the sidebar reopens it here with its panes (`restore`).
"Continue this one" opens that pane's conversation as a normal chat tab on its model.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.bridge import (
    ChatMessage,
    EngineBridge,
    EngineStats,
    ModelInfo,
    SamplingParams,
    TurnFinished,
    TurnStats,
)
from app.chat.compare_pane import ComparePane
from app.history.client import HistoryClient
from app.history.comparison import StoredPane, stored_panes
from app.history.comparison_writer import ComparisonWriter
from app.history.records import ChatSnapshot, StoredMessage
from app.window.tab_models import TabModels

PATH_ROLE = Qt.ItemDataRole.UserRole
Defaults = Callable[[], tuple[SamplingParams, str]]
NO_STATS = TurnStats(0, 0, 0, 0.0, 0.0, 0.0)


class CompareDialog(QDialog):
    continue_requested = Signal(str, list)  # model path, the conversation to open as a chat
    stored = Signal()  # the comparison's chat in the history changed (the sidebar lists it)

    def __init__(self, bridge: EngineBridge, models: TabModels, defaults: Defaults, panes: dict[str, ComparePane],
                 chosen: list[str], parent: QWidget | None = None, history: HistoryClient | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Compare models")
        self.resize(1100, 640)
        self.bridge, self.models, self._defaults = bridge, models, defaults
        self.writer = ComparisonWriter(history) if history is not None else None
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
        self.input.setPlaceholderText("One message, sent to every model ticked above; the next one continues each pane")
        self.input.setAccessibleName("Message to every model")
        self.input.setFixedHeight(self.input.fontMetrics().lineSpacing() * 3 + 14)
        self.hint = QLabel()
        self.hint.setProperty("role", "hint")
        self.send_button = QPushButton("Send to all")
        self.send_button.setProperty("accent", True)
        self.send_button.clicked.connect(self.send)
        self.stop_button = QPushButton("Stop")
        self.stop_button.clicked.connect(self.stop)
        self.new_button = QPushButton("New comparison")
        self.new_button.setToolTip("Clear the panes: the next message starts a new comparison")
        self.new_button.clicked.connect(self.start_over)
        for button in (self.new_button, self.stop_button):
            button.setAutoDefault(False)  # only Send to all is the dialog's default
        self.send_button.setDefault(True)
        row = QHBoxLayout()
        row.addWidget(self.hint, 1)
        row.addWidget(self.new_button)
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
        """The message to every ticked model: a follow-up in each pane, or a new comparison."""
        question, paths = self.input.toPlainText().strip(), self.checked_paths()
        if not question or len(paths) < 2:
            self.hint.setText("Tick two or more models and write a message.")
            return
        if any(pane.answering for pane in self.panes):
            self.hint.setText("Wait for every answer, or Stop them.")
            return
        self.hint.clear()
        self.input.clear()
        if self.panes and {pane.path for pane in self.panes} == set(paths):
            if self.writer is not None:
                self.writer.follow_up(question, list(range(len(self.panes))))
        else:
            self._close_panes()
            for path in paths:
                self._add_pane(path, self.models.name_of(path))
            if self.writer is not None:
                sampling, system_prompt = self._defaults()
                self.writer.start(question, [(pane.path, pane.name) for pane in self.panes], sampling, system_prompt)
                self.stored.emit()
        for pane in self.panes:
            self._ask(pane, question)

    def _add_pane(self, path: str, name: str) -> ComparePane:
        pane = ComparePane(path, name)
        pane.continue_requested.connect(lambda pane: self.continue_requested.emit(pane.path, pane.conversation()))
        pane.answer_finished.connect(self._on_answer_finished)
        pane.text_arrived.connect(self._on_text_arrived)
        self.panes.append(pane)
        self.panes_by_chat[pane.chat_id] = pane
        self.splitter.addWidget(pane)
        self.bridge.set_chat_model(pane.chat_id, path)
        return pane

    def _ask(self, pane: ComparePane, question: str) -> None:
        pane.begin(question)
        if pane.path in self.bridge.loaded_models:
            self._submit(pane)
            return
        self._waiting[pane.chat_id] = pane
        pane.wait(f"Loading {pane.name}…")
        if pane.path not in self.bridge.loading_models:
            self.models.lifecycle.elsewhere.add(pane.path)
            self.models.load(pane.path)

    def _submit(self, pane: ComparePane) -> None:
        sampling, system_prompt = self._defaults()
        messages = ([ChatMessage("system", system_prompt)] if system_prompt else []) + list(pane.messages)
        info = self.bridge.loaded_models.get(pane.path)
        if info is not None:
            pane.set_memory(info.model_bytes + info.kv_cache_bytes + info.prompt_copy_bytes + info.draft_model_bytes)
        self.bridge.submit(pane.chat_id, messages, sampling)

    def start_over(self) -> None:
        """New comparison: the panes go (they stay stored); the next message starts afresh."""
        self.stop()
        self._close_panes()

    def restore(self, snapshot: ChatSnapshot) -> None:
        """A stored comparison, reopened with its panes; the next message continues each of them."""
        self._close_panes()
        panes = stored_panes(snapshot)
        for stored in panes:
            self._add_pane(stored.model, stored.name or self.models.name_of(stored.model)).restore(_entries(stored))
        self._chosen = [pane.path for pane in self.panes]  # offered even where the library does not list them
        self._fill_models()
        self.set_checked(self._chosen)
        if self.writer is not None:
            self.writer.resume(snapshot.chat.id, panes)

    def _on_text_arrived(self, pane: ComparePane, text: str) -> None:
        if self.writer is not None and pane in self.panes:
            self.writer.stream(self.panes.index(pane), text)

    def _on_answer_finished(self, pane: ComparePane, event: TurnFinished) -> None:
        if self.writer is not None and pane in self.panes:
            self.writer.finish(self.panes.index(pane), event)
            self.stored.emit()

    def stop(self) -> None:
        for pane in self.panes:
            if pane.answering:
                self.bridge.cancel(pane.chat_id)

    def _on_model_loaded(self, info: ModelInfo) -> None:
        for chat_id, pane in list(self._waiting.items()):
            if pane.path == info.path:
                del self._waiting[chat_id]
                pane.wait("…")
                self._submit(pane)

    def _on_model_failed(self, path: str, message: str) -> None:
        for chat_id, pane in list(self._waiting.items()):
            if pane.path == path:
                del self._waiting[chat_id]
                failed = TurnFinished(chat_id, "error", NO_STATS, "", f"{pane.name} could not be loaded: {message}")
                pane.on_turn_finished(failed)

    def _on_stats(self, stats: EngineStats) -> None:
        by_path = {model.path: model for model in stats.models}
        for pane in self.panes:
            if (model := by_path.get(pane.path)) is not None:
                pane.set_memory(model.model_bytes + model.kv_cache_bytes + model.prompt_copy_bytes
                                + model.draft_model_bytes)

    def _close_panes(self) -> None:
        for pane in self.panes:
            if pane.answering:  # its answer is stored as far as it got
                pane.on_turn_finished(TurnFinished(pane.chat_id, "cancelled", NO_STATS, pane.text))
            self.bridge.close_chat(pane.chat_id)
            self.panes_by_chat.pop(pane.chat_id, None)
            pane.setParent(None)
            pane.deleteLater()
        self.panes.clear()
        self._waiting.clear()


def _entries(pane: StoredPane) -> list[tuple[ChatMessage, str]]:
    """A stored pane's questions and answers, each with its footer line (an answer's numbers)."""
    return [(ChatMessage(m.role, m.text, m.reasoning), _footer(m)) for m in pane.messages if m.role in ("user", "assistant")]


def _footer(message: StoredMessage) -> str:
    if message.role != "assistant" or message.generated_tokens is None:
        return ""
    speed = float(message.timings.get("decode_tokens_per_second", 0.0))
    return f"{message.generated_tokens} tokens · {speed:.1f} tok/s"
