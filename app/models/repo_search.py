"""Get models' search half: the query line, format and sort boxes, Search button, status line and results list.

Separate from the dialog (app/models/dialog.py) because finding a repo and judging one are two jobs that meet
at one point: a result chosen here names a repo (repo_chosen), and the dialog opens it, shows its files'
verdicts and runs the download. Searching needs only the worker and the token; it knows nothing of files,
verdicts or downloads. It owns its widgets but not their places (the dialog puts the bar across the top and
the results left of the repo panel), so it is a QObject, not a widget.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QLineEdit, QListWidget, QListWidgetItem, QPushButton

from app.models.worker import HubWorker
from engine.hub.search import RepoSummary
from engine.hub.settings import HubSettings

FORMATS = (("GGUF (llama.cpp)", "gguf"), ("safetensors (transformers)", "safetensors"))
SORTS = (("Most downloaded", "downloads"), ("Most liked", "likes"), ("Recently updated", "last_modified"))
REPO_ROLE = Qt.ItemDataRole.UserRole
ERROR_STYLE = "color: #c62828;"


class RepoSearch(QObject):
    repo_chosen = Signal(str)  # a result was picked, or a pasted repo was found: its repo id

    def __init__(self, worker: HubWorker, token: Callable[[], str], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.worker = worker
        self._token = token  # the dialog's token line: a gated repo's search needs it too
        self.query = QLineEdit(placeholderText="Search the Hugging Face Hub, or paste a repo id or URL")
        self.format_box, self.sort_box = QComboBox(), QComboBox()
        for label, value in FORMATS:
            self.format_box.addItem(label, value)
        for label, value in SORTS:
            self.sort_box.addItem(label, value)
        self.search_button = QPushButton("Search")
        self.bar = QHBoxLayout()  # the dialog adds its own buttons after these
        for widget, stretch in ((self.query, 1), (self.format_box, 0), (self.sort_box, 0), (self.search_button, 0)):
            self.bar.addWidget(widget, stretch)
        self.status = QLabel(wordWrap=True)
        self.results = QListWidget()
        self.query.returnPressed.connect(self.search)
        self.search_button.clicked.connect(self.search)
        self.sort_box.currentIndexChanged.connect(self.search)
        self.format_box.currentIndexChanged.connect(self.search)
        self.results.currentItemChanged.connect(self._on_result_chosen)
        worker.searched.connect(self._on_searched)
        worker.failed.connect(self._on_failed)

    def search(self) -> None:
        settings = HubSettings.from_env()
        if settings.offline:  # said at once, without a thread or a request
            self.say(f"Offline mode is on (HF_HUB_OFFLINE), so the Hub is not searched. Your downloaded models "
                     "are in Model > Settings.", error=True)
            return
        self.say("Searching…")
        self.worker.search(self.query.text(), self.format_box.currentData(), self.sort_box.currentData(),
                           self._token())

    def say(self, message: str, error: bool = False) -> None:
        self.status.setText(message)
        self.status.setStyleSheet(ERROR_STYLE if error else "")

    @Slot(object)
    def _on_searched(self, results: list[RepoSummary]) -> None:
        self.results.clear()
        for result in results:
            when = f" · updated {result.last_modified:%Y-%m-%d}" if result.last_modified else ""
            item = QListWidgetItem(f"{result.repo_id}{' (gated)' if result.gated else ''}\n"
                                   f"{result.downloads:,} downloads · {result.likes:,} likes{when}")
            item.setData(REPO_ROLE, result.repo_id)
            self.results.addItem(item)
        self.say(f"{len(results)} model{'s' if len(results) != 1 else ''} found." if results else
                 "No text-generation models found; try other words, or the other format.")
        if len(results) == 1:
            self.results.setCurrentRow(0)  # a pasted repo: open it at once

    @Slot(object, object)
    def _on_result_chosen(self, current: QListWidgetItem | None, previous: object = None) -> None:
        if current is not None:
            self.repo_chosen.emit(current.data(REPO_ROLE))

    @Slot(str, str, str)
    def _on_failed(self, what: str, message: str, kind: str) -> None:
        if what != "repo":  # a repo's failure is the repo panel's to show
            self.say(message, error=True)
