"""Get models: search the Hugging Face Hub, see which of a repo's files fits this machine, download it.

Search results on the left (or one repo, pasted as an id or URL); on the right
the chosen repo's models with the memory each needs at the user's context and
parallel chats, the recommended one starred, and why in one line. Download
shows bytes, speed and time left; Cancel keeps what arrived for the next try;
when the file is verified, "Use this model" hands its path to the window.
The dialog never waits on the network: every request runs on a thread.
The search half (query, boxes, results list) is app/models/repo_search.py; this
module opens the chosen repo, shows its files' verdicts and runs the download.
"""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import Signal, Slot
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (QDialog, QHBoxLayout, QLabel, QLineEdit, QProgressBar, QPushButton, QSplitter,
                               QVBoxLayout, QWidget)

from app.models.downloads import DownloadManager, Downloaded, progress_text
from app.models.draft_offer import DraftOffer
from app.models.files_table import FilesTable
from app.models.projector_pick import ProjectorPick, kept_projector
from app.models.repo_search import ERROR_STYLE, RepoSearch
from app.models.worker import HubWorker
from engine.hub.fit import RepoView
from engine.hub.progress import DownloadProgress
from engine.hub.settings import HubSettings
from engine.protocol import ModelConfig
from engine.units import format_bytes


class GetModelsDialog(QDialog):
    model_chosen = Signal(str, str, str)  # path, backend ("llamacpp" / "hf"), quantization ("none", "int8", "nf4")
    draft_chosen = Signal(str, str)  # the model's path, its draft model's: emitted just before model_chosen
    projector_chosen = Signal(str, str)  # the model's path, its vision projector's where one was picked: likewise
    voice_models_requested = Signal()  # Voice models…: the speech models and voices (app/models/voice_dialog.py)

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
        self.search()  # at once: the most downloaded models, or the sentence that the Hub cannot be reached

    # ------------------------------------------------------------ building

    def _build(self) -> None:
        self.token = QLineEdit(placeholderText="Hugging Face token: only for gated or private models (or set HF_TOKEN)")
        self.token.setEchoMode(QLineEdit.EchoMode.Password)
        self.repo_search = RepoSearch(self.worker, self.token.text, self)
        search = self.repo_search
        self.query, self.results, self.status = search.query, search.results, search.status  # the tests' handles
        self.voice_button = QPushButton("Voice models…")
        self.voice_button.setToolTip("Speech-to-text models and Piper voices, with sizes")
        self.voice_button.clicked.connect(self.voice_models_requested)
        self.repo_search.bar.addWidget(self.voice_button)
        splitter = QSplitter()
        splitter.addWidget(self.results)
        splitter.addWidget(self._build_repo_panel())
        splitter.setSizes([380, 660])
        layout = QVBoxLayout(self)
        layout.addLayout(self.repo_search.bar)
        layout.addWidget(self.status)
        layout.addWidget(splitter, 1)

    def _build_repo_panel(self) -> QWidget:
        panel = QWidget()
        self.repo_title = QLabel("Choose a model on the left.", wordWrap=True, openExternalLinks=True)
        self.memory_label = QLabel(wordWrap=True)
        self.files = FilesTable()
        self.projector_pick = ProjectorPick()  # where the model's folder has several mmproj files
        self.why = QLabel(wordWrap=True)
        self.draft_offer = DraftOffer(self.files.selected_choice)
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
        layout.addWidget(self.projector_pick)
        layout.addWidget(self.why)
        layout.addWidget(self.draft_offer)
        layout.addWidget(self.token)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.progress_label)
        self._idle()
        return panel

    def _connect(self) -> None:
        self.repo_search.repo_chosen.connect(self._on_repo_chosen)
        self.token.editingFinished.connect(self._on_token_entered)
        self.files.itemSelectionChanged.connect(self._on_file_chosen)
        self.projector_pick.changed.connect(self._on_file_chosen)
        self.download_button.clicked.connect(self.download)
        self.cancel_button.clicked.connect(self.downloads.cancel)
        self.use_button.clicked.connect(self.use)
        self.worker.repo_opened.connect(self._on_repo_opened)
        self.worker.failed.connect(self._on_failed)
        self.downloads.progressed.connect(self._on_progress)
        self.downloads.finished.connect(self._on_downloaded)
        self.downloads.failed.connect(self._on_download_failed)

    def search(self) -> None:
        """Search again with what the bar holds (app/models/repo_search.py)."""
        self.repo_search.search()

    # ------------------------------------------------------------ the chosen repo

    @Slot(str)
    def _on_repo_chosen(self, repo_id: str) -> None:
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
        self.draft_offer.look(answer, self.config, self.token.text())

    @Slot(str, str, str)
    def _on_failed(self, what: str, message: str, kind: str) -> None:
        if what == "repo":  # a search's failure is the search's to show (app/models/repo_search.py)
            self.repo_title.setText(message)
            self.repo_title.setStyleSheet(ERROR_STYLE)

    @Slot()
    def _on_token_entered(self) -> None:
        # a gated repo's verdicts need its files' headers, which the token now lets us read
        if self.answer is not None and self.answer.report is None and self.token.text().strip():
            self.worker.open_repo(self.answer.listing.repo_id, self.config, self.token.text())

    # ------------------------------------------------------------ downloading

    @Slot()
    def _on_file_chosen(self) -> None:
        choice = self.files.selected_choice()
        self.draft_offer.show_for(choice)
        self.projector_pick.show_for(choice, self.answer.listing.files if self.answer else ())
        picked = self.projector_pick.applied(choice) if choice is not None else None
        if picked is not choice and picked is not None and self.answer is not None and self.answer.report:
            fit = self.answer.report.refit(picked, self.config)  # the row's verdict counts the picked projector
            if fit is not None:
                self.files.show_fit(picked, fit)
        choice = picked
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
        choice = self.projector_pick.applied(choice)
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
        if self.draft_offer.takes(result):
            self._idle()
            self.progress_label.setText(f"The draft model {result.repo_id} · {result.choice.label} is downloaded and "
                                        "verified too.")
            self.use_button.setVisible(self.downloaded is not None)
            return
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
        if self.draft_offer.start_after(self.downloads, self.token.text()):
            self._show_download_running()

    @Slot(str, str)
    def _on_download_failed(self, message: str, kind: str) -> None:
        self._idle()
        if self.draft_offer.download_failed() and self.downloaded is not None:
            self.use_button.show()  # the model is here: it can be used without its draft model
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
        if self.draft_offer.chosen_path() and self.downloaded.backend in ("llamacpp", "hf"):
            self.draft_chosen.emit(self.downloaded.path, self.draft_offer.chosen_path())
        if kept := kept_projector(self.downloaded.path, self.downloaded.choice):
            self.projector_chosen.emit(self.downloaded.path, kept)
        self.model_chosen.emit(self.downloaded.path, self.downloaded.backend, quantization)
        self.accept()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's name
        self.worker.wait()  # a download goes on (the status bar shows it); searches end with the dialog
        self.draft_offer.wait()
        super().closeEvent(event)

    def done(self, result: int) -> None:
        self.worker.wait()
        self.draft_offer.wait()
        super().done(result)
