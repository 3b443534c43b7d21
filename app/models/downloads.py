"""One download at a time, on its own thread, shared by the Get models dialog and the status bar.

The dialog can close while a model downloads: the manager lives with the window,
chats go on, the indicator in the status bar shows the progress, and a click on
it brings the dialog back.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal, Slot

from app.misc.qt_compat import guard_emit_refcount_bug
from app.misc.thread_relay import emit_from_thread
from engine.units import format_bytes
from engine.hub.download import fetch_choice
from engine.hub.errors import HubError
from engine.hub.listing import ModelChoice, RepoListing
from engine.hub.progress import DownloadProgress
from engine.hub.settings import HubSettings

guard_emit_refcount_bug()  # progress is emitted from the download thread, many times


def progress_text(progress: DownloadProgress) -> str:
    """'45.2 MiB of 98.0 MiB · 12.3 MiB/s · 4 s left'; what is being checked while bytes on disk are hashed."""
    if progress.stage == "checking":
        return f"Checking what is already on disk ({progress.file})…"
    if progress.stage == "done":
        return f"{format_bytes(progress.total_bytes)} downloaded and verified."
    text = f"{format_bytes(progress.done_bytes)} of {format_bytes(progress.total_bytes)}"
    if progress.bytes_per_second > 0:
        text += f" · {format_bytes(progress.bytes_per_second)}/s"
    if progress.seconds_left:
        text += f" · {duration(progress.seconds_left)} left"
    if progress.reused_bytes:
        text += f" · {format_bytes(progress.reused_bytes)} were already here"
    return text


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


@dataclass(frozen=True)
class Downloaded:
    """A finished, verified download: what to load."""

    path: str
    repo_id: str
    choice: ModelChoice

    @property
    def backend(self) -> str:
        return "llamacpp" if self.choice.kind == "gguf" else "hf"


class DownloadManager(QObject):
    started = Signal(str)  # what is downloading, for a person ("org/repo · file.gguf")
    progressed = Signal(object)  # DownloadProgress
    finished = Signal(object)  # Downloaded
    failed = Signal(str, str)  # message, kind ("cancelled", "corrupt", "disk", "gated", "connection", ...)
    _ended = Signal(object)  # Downloaded or HubError, from the download thread

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self.title = ""
        self.last_progress: DownloadProgress | None = None
        self._ended.connect(self._on_ended)

    @property
    def active(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, listing: RepoListing, choice: ModelChoice, token: str = "") -> bool:
        """Begin downloading `choice`; False (and nothing starts) while another download runs."""
        if self.active:
            return False
        settings = HubSettings.from_env(token)
        self._cancel = threading.Event()
        self.title = f"{listing.repo_id} · {choice.label}"
        self.last_progress = None
        cancel = self._cancel

        def body() -> None:
            try:
                path = fetch_choice(listing, choice, settings, self._report_progress, cancel.is_set)
                result: object = Downloaded(path, listing.repo_id, choice)
            except HubError as error:
                result = error
            except Exception as error:  # never a silent dead thread: the dialog says what happened
                result = HubError(f"The download failed: {error}")
            emit_from_thread(self, "_ended", result)

        self._thread = threading.Thread(target=body, name="hearth-download", daemon=True)
        self.progressed.connect(self._remember)
        self._thread.start()
        self.started.emit(self.title)
        return True

    @Slot(object)
    def _report_progress(self, progress: DownloadProgress) -> None:
        """The download's thread: its progress, to the GUI thread."""
        emit_from_thread(self, "progressed", progress)

    def _remember(self, progress: DownloadProgress) -> None:
        self.last_progress = progress

    def cancel(self) -> None:
        """Stop soon (within one chunk); what arrived is kept for the next try."""
        self._cancel.set()

    @Slot(object)
    def _on_ended(self, result: object) -> None:
        if self._thread is not None:
            self._thread.join(5)
        self._thread = None
        self.progressed.disconnect(self._remember)
        if isinstance(result, HubError):
            self.failed.emit(str(result), result.kind)
        else:
            self.finished.emit(result)

    def shutdown(self, timeout: float = 10.0) -> None:
        """Cancel and wait: the window is closing."""
        self.cancel()
        if self._thread is not None:
            self._thread.join(timeout)
