"""Get models' draft model offer, under a GGUF repo's files or a transformers folder's: the smaller model of the
same vocabulary suggested for it (engine/hub/draft_pick.py), the chosen file's fit with the draft beside it, and a
box to download it after the model and use it as that model's draft model (Settings > Draft model).

The suggestion is looked for on a thread of its own once the repo's files are shown, so the files and their
verdicts never wait for it; a newer repo's look makes an older answer stale.
"""

from __future__ import annotations

import threading
from typing import Callable

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QCheckBox, QLabel, QVBoxLayout, QWidget

from app.misc.thread_relay import emit_from_thread
from app.models.downloads import DownloadManager, Downloaded
from app.models.files_table import VERDICT_COLORS, needs_text
from engine.hub.draft_pick import DraftSuggestion, suggest_draft
from engine.hub.errors import HubError
from engine.hub.fit import RepoView
from engine.hub.listing import ModelChoice
from engine.hub.settings import HubSettings
from engine.protocol import ModelConfig

TAKE_TEXT = "Download it too, and use it as this model's draft model"


class DraftOffer(QWidget):
    answered = Signal()  # a suggestion (or why there is none) is shown
    _answer = Signal(int, object)  # generation, DraftSuggestion or HubError, from the look's thread

    def __init__(self, current: Callable[[], ModelChoice | None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._current = current  # the file chosen in the dialog's table
        self.label = QLabel(wordWrap=True)
        self.fit_label = QLabel(wordWrap=True)
        self.take = QCheckBox(TAKE_TEXT)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for widget in (self.label, self.fit_label, self.take):
            layout.addWidget(widget)
        self.suggestion: DraftSuggestion | None = None
        self.downloaded_path = ""  # the draft model on disk, once downloaded (or found there) for this repo
        self._pending: tuple[str, str] | None = None  # (repo, file) of the draft model downloading now
        self._generation = 0
        self._threads: list[threading.Thread] = []
        self._answer.connect(self._on_answer)
        self._clear()

    def look(self, view: RepoView, config: ModelConfig, token: str = "") -> None:
        """Find a draft model for the repo on a thread; only repos with verdicts (GGUF or folders) are asked about."""
        self._generation += 1
        self._clear()
        if view.report is None or not any(choice.kind in ("gguf", "hf") for choice in view.listing.choices):
            return
        self.show()
        self.label.setText("Draft model (speculative decoding): looking for a smaller model of the same vocabulary…")
        generation, settings = self._generation, HubSettings.from_env(token)

        def body() -> None:
            try:
                result: object = suggest_draft(view, config, settings)
            except HubError as error:
                result = error
            except Exception as error:  # a surprise is still a sentence, never a dead thread
                result = HubError(f"Something went wrong looking for a draft model: {error}")
            emit_from_thread(self, "_answer", generation, result)

        self._threads = [thread for thread in self._threads if thread.is_alive()]
        thread = threading.Thread(target=body, name="hearth-hub-draft", daemon=True)
        self._threads.append(thread)
        thread.start()

    @Slot(int, object)
    def _on_answer(self, generation: int, result: object) -> None:
        if generation != self._generation:
            return
        if isinstance(result, DraftSuggestion):
            self.suggestion = result
            self.label.setText(f"Draft model (speculative decoding): {result.why}" if result.found else result.why)
            self.take.setVisible(result.found)
            self.downloaded_path = result.local_path
            self.show_for(self._current())
        else:
            self.label.setText(f"No draft model suggested: {result}")
        self.answered.emit()

    def show_for(self, choice: ModelChoice | None) -> None:
        """The chosen file's verdict with the draft model loaded beside it."""
        fit = self.suggestion.fits.get(choice.key) if self.suggestion and choice else None
        self.fit_label.setVisible(fit is not None)
        if fit is not None:
            self.fit_label.setText(f"With it, {choice.label if choice else ''} needs {needs_text(fit)}: {fit.level}.")
            self.fit_label.setToolTip(f"{fit.message} {fit.suggestion}".strip())
            self.fit_label.setStyleSheet(f"color: {VERDICT_COLORS.get(fit.level, '')};")

    # ------------------------------------------------------------ downloading

    def start_after(self, downloads: DownloadManager, token: str = "") -> bool:
        """The model is downloaded: download the draft model too where the box is ticked; True when it started."""
        suggestion = self.suggestion
        if not self.take.isChecked() or suggestion is None or suggestion.listing is None or suggestion.choice is None:
            return False
        if not downloads.start(suggestion.listing, suggestion.choice, token):
            return False
        self._pending = (suggestion.listing.repo_id, suggestion.choice.key)
        return True

    def takes(self, result: Downloaded) -> bool:
        """Whether a finished download is the draft model this offer started (it is kept for "Use this model")."""
        if self._pending != (result.repo_id, result.choice.key):
            return False
        self._pending = None
        suggestion = self.suggestion
        if suggestion and suggestion.listing and suggestion.choice \
                and (suggestion.listing.repo_id, suggestion.choice.key) == (result.repo_id, result.choice.key):
            self.downloaded_path = result.path  # not where another repo was opened meanwhile
        return True

    def download_failed(self) -> bool:
        """A download failed; True where it was the draft model's (the model itself is downloaded)."""
        was, self._pending = self._pending, None
        return was is not None

    def chosen_path(self) -> str:
        """The draft model to use with the model: one downloaded (or already here) with the box ticked."""
        return self.downloaded_path if self.take.isChecked() and self.suggestion and self.suggestion.found else ""

    def _clear(self) -> None:
        self.suggestion, self.downloaded_path = None, ""
        self.label.setText("")
        self.fit_label.hide()
        self.take.hide()
        self.take.setChecked(False)
        self.hide()

    def wait(self, timeout: float = 10.0) -> None:
        """Let a running look finish (its answer is dropped): no thread outlives the dialog."""
        self._generation += 1
        for thread in self._threads:
            thread.join(timeout)
        self._threads = []
