"""Get voice models: the speech-to-text models (faster-whisper) and Piper voices on the Hub, with sizes; download, use.

Opened from Settings > Voice. It lists the suggested repos (engine/hub/voice_models.py), or one pasted
as an id, each model with its download size and the RAM it needs once loaded, and whether it is already
here; a filter narrows Piper's hundred voices to a language. Download fetches it, verified, into the
same cache as the chat models, with bytes and speed as it goes (Cancel keeps what arrived); Use hands its
path to the page (the folder for a speech model, the .onnx for a voice). Every request runs on a thread:
the window never waits on the network.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (QDialog, QHBoxLayout, QLabel, QLineEdit, QListWidget, QListWidgetItem, QProgressBar,
                               QPushButton, QVBoxLayout, QWidget)

from app.misc.thread_relay import emit_from_thread
from app.models.downloads import progress_text
from engine.hub.errors import HubError
from engine.hub.listing import RepoListing
from engine.hub.settings import HubSettings
from engine.hub.voice_models import (SUGGESTED_REPOS, VoiceChoice, fetch_voice, is_downloaded, list_voice_models,
                                     local_path)

CHOICE_ROLE = Qt.ItemDataRole.UserRole
ERROR_STYLE = "color: #c62828;"


class VoiceModelsDialog(QDialog):
    chosen = Signal(str, str)  # "speech to text" or "voice", the local path to use
    _listed = Signal(str, object)  # repo id, (listing, choices) or a HubError (listing thread)
    _progressed = Signal(object)  # DownloadProgress (download thread)
    _fetched = Signal(object)  # the local path, or a HubError (download thread)

    def __init__(self, parent: QWidget | None = None, repos: Sequence[str] | None = None,
                 hub: Callable[[], HubSettings] = HubSettings.from_env) -> None:
        super().__init__(parent)
        self.setWindowTitle("Get voice models")
        self.resize(760, 520)
        self._hub = hub
        self._threads: list[threading.Thread] = []
        self._cancel = threading.Event()
        self._downloading: tuple[RepoListing, VoiceChoice] | None = None
        self._build()
        self._listed.connect(self._on_listed)
        self._progressed.connect(self._on_progress)
        self._fetched.connect(self._on_fetched)
        listed = SUGGESTED_REPOS if repos is None else tuple(repos)
        self.listing_repos = len(listed)  # repos still being listed
        self._start("hearth-voice-list", lambda: self._list(listed))

    def _build(self) -> None:
        intro = QLabel("Speech-to-text models (faster-whisper: larger hears better, and slower) and Piper voices "
                       "from the Hugging Face Hub: the size to download, and the memory each takes once loaded.",
                       wordWrap=True)
        self.repo_edit = QLineEdit(placeholderText="Another repo: owner/name of a faster-whisper model or Piper voices")
        self.repo_edit.returnPressed.connect(self._on_add_repo)
        self.filter_edit = QLineEdit(placeholderText="Filter: a language (en_US, de_DE), a name, whisper…")
        self.filter_edit.textChanged.connect(self._apply_filter)
        self.list = QListWidget()
        self.list.setAccessibleName("Voice models")
        self.list.currentItemChanged.connect(lambda *_: self._update_buttons())
        self.status = QLabel(wordWrap=True)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.hide()
        self.download_button = QPushButton("Download")
        self.download_button.clicked.connect(self._on_download)
        self.cancel_button = QPushButton("Cancel download")
        self.cancel_button.clicked.connect(self._cancel.set)
        self.use_button = QPushButton("Use")
        self.use_button.setToolTip("Settings > Voice takes it (the speech model, or the voice answers are read with)")
        self.use_button.clicked.connect(self._on_use)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        buttons = QHBoxLayout()
        for button in (self.download_button, self.cancel_button, self.use_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        for widget in (intro, self.repo_edit, self.filter_edit, self.list, self.status, self.progress):
            layout.addWidget(widget)
        layout.addLayout(buttons)
        self._update_buttons()

    # ------------------------------------------------------------ listing (a thread)

    def _start(self, name: str, work: Callable[[], None]) -> None:
        self._threads = [thread for thread in self._threads if thread.is_alive()]
        thread = threading.Thread(target=work, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _list(self, repos: Sequence[str]) -> None:
        settings = self._hub()
        for repo in repos:
            try:
                result: Any = list_voice_models(repo, settings)
            except HubError as error:
                result = error
            emit_from_thread(self, "_listed", repo, result)

    def _on_add_repo(self) -> None:
        repo = self.repo_edit.text().strip()
        if repo:
            self.listing_repos += 1
            self._start("hearth-voice-list", lambda: self._list([repo]))

    def _on_listed(self, repo: str, result: object) -> None:
        self.listing_repos -= 1
        if isinstance(result, HubError):
            self._say(f"{repo}: {result}", error=True)
            return
        assert isinstance(result, tuple)
        listing: RepoListing = result[0]
        choices: list[VoiceChoice] = result[1]
        if not choices:
            self._say(f"{repo} has no faster-whisper model or Piper voice Hearth can use.", error=True)
        settings = self._hub()
        for choice in choices:
            item = QListWidgetItem()
            item.setData(CHOICE_ROLE, (listing, choice))
            self._label(item, is_downloaded(listing, choice, settings))
            self.list.addItem(item)
        self._apply_filter(self.filter_edit.text())

    def _label(self, item: QListWidgetItem, here: bool) -> None:
        _, choice = item.data(CHOICE_ROLE)
        item.setText(choice.line() + (" · downloaded" if here else ""))
        item.setData(CHOICE_ROLE + 1, here)

    def _apply_filter(self, text: str) -> None:
        words = text.lower().split()
        for row in range(self.list.count()):
            item = self.list.item(row)
            item.setHidden(not all(word in item.text().lower() for word in words))

    # ------------------------------------------------------------ downloading (a thread)

    def _on_download(self) -> None:
        item = self.list.currentItem()
        if item is None or self._downloading is not None:
            return
        listing, choice = item.data(CHOICE_ROLE)
        self._downloading = (listing, choice)
        self._cancel.clear()
        self.progress.setValue(0)
        self.progress.show()
        self._say(f"Downloading {choice.name}…")
        settings = self._hub()
        self._start("hearth-voice-download", lambda: self._fetch(listing, choice, settings))
        self._update_buttons()

    def _report_progress(self, progress: Any) -> None:
        emit_from_thread(self, "_progressed", progress)

    def _fetch(self, listing: RepoListing, choice: VoiceChoice, settings: HubSettings) -> None:
        try:
            result: Any = fetch_voice(listing, choice, settings, self._report_progress, self._cancel.is_set)
        except HubError as error:
            result = error
        emit_from_thread(self, "_fetched", result)

    def _on_progress(self, progress: Any) -> None:
        self.progress.setValue(round(progress.fraction * 1000))
        self._say(progress_text(progress))

    def _on_fetched(self, result: object) -> None:
        downloading, self._downloading = self._downloading, None
        self.progress.hide()
        if isinstance(result, HubError):
            self._say(str(result), error=True)
        elif downloading is not None:
            for row in range(self.list.count()):
                if self.list.item(row).data(CHOICE_ROLE)[1] is downloading[1]:
                    self._label(self.list.item(row), True)
            self._say(f"{downloading[1].name} is downloaded and verified: Use makes Settings > Voice take it.")
        self._update_buttons()

    def _on_use(self) -> None:
        item = self.list.currentItem()
        if item is None or not item.data(CHOICE_ROLE + 1):
            return
        listing, choice = item.data(CHOICE_ROLE)
        self.chosen.emit(choice.kind, local_path(listing, choice, self._hub()))
        self._say(f"Settings > Voice now uses {choice.name}.")

    # ------------------------------------------------------------ the rest

    def _update_buttons(self) -> None:
        item = self.list.currentItem()
        busy = self._downloading is not None
        self.download_button.setEnabled(item is not None and not busy and not item.data(CHOICE_ROLE + 1))
        self.use_button.setEnabled(item is not None and bool(item.data(CHOICE_ROLE + 1)))
        self.cancel_button.setVisible(busy)

    def _say(self, text: str, error: bool = False) -> None:
        self.status.setText(text)
        self.status.setStyleSheet(ERROR_STYLE if error else "")

    def closeEvent(self, event: QCloseEvent) -> None:
        """A download under way stops (what arrived is kept); no thread outlives the dialog."""
        self._cancel.set()
        for thread in self._threads:
            thread.join(10)
        self._threads = []
        super().closeEvent(event)
