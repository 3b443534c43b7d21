"""Get models: search the Hugging Face Hub, see which of a repo's files fits this machine, download it.

Search results on the left (or one repo, pasted as an id or URL); on the right
the chosen repo's models with the memory each needs at the user's context and
parallel chats, the recommended one starred, and why in one line. Download
shows bytes, speed and time left; Cancel keeps what arrived for the next try;
when the file is verified, "Use this model" hands its path to the window.
The dialog never waits on the network: every request runs on a thread.
"""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (QComboBox, QDialog, QHBoxLayout, QLabel, QLineEdit, QListWidget, QListWidgetItem,
                               QProgressBar, QPushButton, QSplitter, QVBoxLayout, QWidget)

from app.models.downloads import DownloadManager, Downloaded, progress_text
from app.models.files_table import FilesTable
from app.models.worker import HubWorker
from engine.hub.fit import RepoView
from engine.hub.progress import DownloadProgress
from engine.hub.search import RepoSummary
from engine.hub.settings import HubSettings
from engine.protocol import ModelConfig
from engine.units import format_bytes

FORMATS = (("GGUF (llama.cpp)", "gguf"), ("safetensors (transformers)", "safetensors"))
SORTS = (("Most downloaded", "downloads"), ("Most liked", "likes"), ("Recently updated", "last_modified"))
REPO_ROLE = Qt.ItemDataRole.UserRole
ERROR_STYLE = "color: #c62828;"


class GetModelsDialog(QDialog):
    model_chosen = Signal(str, str, str)  # path, backend ("llamacpp" / "hf"), quantization ("none", "int8", "nf4")

    def __init__(self, downloads: DownloadManager, config: ModelConfig, parent: QWidget | None = None,
                 worker: HubWorker | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Get models")
        self.resize(1040, 620)
        self.downloads = downloads
        self.config = config
        self.worker = worker or HubWorker(self)
        self.answer: RepoView | None = None
        self.downloaded: Downloaded | None = None
        self._build()
        self._connect()
        if downloads.active:
            self._show_download_running()
        self.search()  # at once: the most downloaded models, or the sentence saying the Hub cannot be reached

    # ------------------------------------------------------------ building

    def _build(self) -> None:
        self.query = QLineEdit(placeholderText="Search the Hugging Face Hub, or paste a repo id or URL")
        self.format_box, self.sort_box = QComboBox(), QComboBox()
        for label, value in FORMATS:
            self.format_box.addItem(label, value)
        for label, value in SORTS:
            self.sort_box.addItem(label, value)
        self.search_button = QPushButton("Search")
        top = QHBoxLayout()
        for widget, stretch in ((self.query, 1), (self.format_box, 0), (self.sort_box, 0), (self.search_button, 0)):
            top.addWidget(widget, stretch)
        self.status = QLabel(wordWrap=True)
        self.results = QListWidget()
        splitter = QSplitter()
        splitter.addWidget(self.results)
        splitter.addWidget(self._build_repo_panel())
        splitter.setSizes([380, 660])
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.status)
        layout.addWidget(splitter, 1)

    def _build_repo_panel(self) -> QWidget:
        panel = QWidget()
        self.repo_title = QLabel("Choose a model on the left.", wordWrap=True, openExternalLinks=True)
        self.memory_label = QLabel(wordWrap=True)
        self.files = FilesTable()
        self.why = QLabel(wordWrap=True)
        self.token = QLineEdit(placeholderText="Hugging Face token: only for gated or private models (or set HF_TOKEN)")
        self.token.setEchoMode(QLineEdit.EchoMode.Password)
        self.download_button = QPushButton("Download")
        self.cancel_button = QPushButton("Cancel download")
        self.use_button = QPushButton("Use this model")
        self.progress = QProgressBar(maximum=1000)
        self.progress_label = QLabel(wordWrap=True)
        buttons = QHBoxLayout()
        for button in (self.download_button, self.cancel_button, self.use_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout = QVBoxLayout(panel)
        layout.addWidget(self.repo_title)
        layout.addWidget(self.memory_label)
        layout.addWidget(self.files, 1)
        layout.addWidget(self.why)
        layout.addWidget(self.token)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.progress_label)
        self._idle()
        return panel

    def _connect(self) -> None:
        self.query.returnPressed.connect(self.search)
        self.token.editingFinished.connect(self._on_token_entered)
        self.search_button.clicked.connect(self.search)
        self.sort_box.currentIndexChanged.connect(self.search)
        self.format_box.currentIndexChanged.connect(self.search)
        self.results.currentItemChanged.connect(self._on_result_chosen)
        self.files.itemSelectionChanged.connect(self._on_file_chosen)
        self.download_button.clicked.connect(self.download)
        self.cancel_button.clicked.connect(self.downloads.cancel)
        self.use_button.clicked.connect(self.use)
        self.worker.searched.connect(self._on_searched)
        self.worker.repo_opened.connect(self._on_repo_opened)
        self.worker.failed.connect(self._on_failed)
        self.downloads.progressed.connect(self._on_progress)
        self.downloads.finished.connect(self._on_downloaded)
        self.downloads.failed.connect(self._on_download_failed)

    # ------------------------------------------------------------ searching

    def search(self) -> None:
        settings = HubSettings.from_env()
        if settings.offline:  # said at once, without a thread or a request
            self._say(f"Offline mode is on (HF_HUB_OFFLINE), so the Hub is not searched. Your downloaded models "
                      "are in Model > Settings.", error=True)
            return
        self._say("Searching…")
        self.worker.search(self.query.text(), self.format_box.currentData(), self.sort_box.currentData(),
                           self.token.text())

    @Slot(object)
    def _on_searched(self, results: list[RepoSummary]) -> None:
        self.results.clear()
        for result in results:
            when = f" · updated {result.last_modified:%Y-%m-%d}" if result.last_modified else ""
            item = QListWidgetItem(f"{result.repo_id}{' (gated)' if result.gated else ''}\n"
                                   f"{result.downloads:,} downloads · {result.likes:,} likes{when}")
            item.setData(REPO_ROLE, result.repo_id)
            self.results.addItem(item)
        self._say(f"{len(results)} model{'s' if len(results) != 1 else ''} found." if results else
                  "No text-generation models found; try other words, or the other format.")
        if len(results) == 1:
            self.results.setCurrentRow(0)  # a pasted repo: open it at once

    @Slot(object, object)
    def _on_result_chosen(self, current: QListWidgetItem | None, previous: object = None) -> None:
        if current is None:
            return
        repo_id = current.data(REPO_ROLE)
        self.repo_title.setText(f"<b>{repo_id}</b>: reading its files…")
        self.worker.open_repo(repo_id, self.config, self.token.text())

    @Slot(object)
    def _on_repo_opened(self, answer: RepoView) -> None:
        self.answer = answer
        listing = answer.listing
        page = HubSettings.from_env().page_url(listing.repo_id)
        self.repo_title.setText(f'<b><a href="{page}">{listing.repo_id}</a></b>'
                                f'{" · gated: needs a token" if listing.gated else ""}')
        if answer.report:
            self.memory_label.setText(f"For {answer.report.memory.label()}, with {self.config.slots} chats of "
                                      f"{self.config.context_length:,} tokens (your settings):")
            self.why.setText(("★ " if answer.report.recommended else "") + answer.report.why)
            self.why.setStyleSheet("" if answer.report.recommended else ERROR_STYLE)
        else:
            self.memory_label.setText("")
            self.why.setText("No verdicts yet: only accounts that accepted this model's license may read its files. "
                             "Accept it on the model's page (the link above), then enter a token below."
                             if answer.listing.gated else answer.problem)
            self.why.setStyleSheet(ERROR_STYLE)
        self.files.show_answer(answer)
        self._on_file_chosen()

    @Slot(str, str, str)
    def _on_failed(self, what: str, message: str, kind: str) -> None:
        if what == "repo":
            self.repo_title.setText(message)
            self.repo_title.setStyleSheet(ERROR_STYLE)
        else:
            self._say(message, error=True)

    @Slot()
    def _on_token_entered(self) -> None:
        # a gated repo's verdicts need its files' headers, which the token now lets us read
        if self.answer is not None and self.answer.report is None and self.token.text().strip():
            self.worker.open_repo(self.answer.listing.repo_id, self.config, self.token.text())

    def _say(self, message: str, error: bool = False) -> None:
        self.status.setText(message)
        self.status.setStyleSheet(ERROR_STYLE if error else "")

    # ------------------------------------------------------------ downloading

    @Slot()
    def _on_file_chosen(self) -> None:
        choice = self.files.selected_choice()
        if self.downloads.active or choice is None or self.answer is None:
            self.download_button.setEnabled(False)
            return
        here = choice.key in self.answer.local
        self.download_button.setEnabled(True)
        self.download_button.setText("Check and use" if here else f"Download {format_bytes(choice.download_bytes)}")

    def download(self) -> None:
        choice = self.files.selected_choice()
        if self.answer is None or choice is None:
            return
        if self.downloads.start(self.answer.listing, choice, self.token.text()):
            self.downloaded = None
            self._show_download_running()

    def _show_download_running(self) -> None:
        self.download_button.setEnabled(False)
        self.cancel_button.show()
        self.use_button.hide()
        self.progress.show()
        self.progress.setValue(0)
        self.progress_label.setStyleSheet("")
        self.progress_label.setText(f"Downloading {self.downloads.title}…")
        if self.downloads.last_progress is not None:
            self._on_progress(self.downloads.last_progress)

    @Slot(object)
    def _on_progress(self, progress: DownloadProgress) -> None:
        self.progress.setValue(int(progress.fraction * 1000))
        self.progress_label.setText(f"{self.downloads.title}: {progress_text(progress)}")

    @Slot(object)
    def _on_downloaded(self, result: Downloaded) -> None:
        self.downloaded = result
        if self.answer is not None and self.answer.listing.repo_id == result.repo_id:
            local = {**self.answer.local, result.choice.key: result.path}
            self.answer = dataclasses.replace(self.answer, local=local)
            self.files.show_answer(self.answer)
            self.files.select(result.choice.key)
        self._idle()
        self.progress.show()
        self.progress.setValue(1000)
        self.progress_label.setText(f"{result.repo_id} · {result.choice.label}: downloaded and verified (sha256). "
                                    f"It is in the Hugging Face cache: {result.path}")
        self.use_button.show()
        self.use_button.setFocus()

    @Slot(str, str)
    def _on_download_failed(self, message: str, kind: str) -> None:
        self._idle()
        self.progress_label.setText(message)
        self.progress_label.setStyleSheet("" if kind == "cancelled" else ERROR_STYLE)
        if kind == "gated":
            self.token.setFocus()

    def _idle(self) -> None:
        self.cancel_button.hide()
        self.use_button.hide()
        self.progress.hide()
        self._on_file_chosen()

    def use(self) -> None:
        """Hand the verified model to the window (which loads it) and close."""
        if self.downloaded is None:
            return
        quantization = self.downloaded.choice.quant if self.downloaded.choice.kind == "hf" else "none"
        self.model_chosen.emit(self.downloaded.path, self.downloaded.backend, quantization)
        self.accept()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's name
        self.worker.wait()  # a download goes on (the status bar shows it); searches end with the dialog
        super().closeEvent(event)

    def done(self, result: int) -> None:
        self.worker.wait()
        super().done(result)
