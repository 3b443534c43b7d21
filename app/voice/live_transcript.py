"""Words as they are heard: while the microphone listens, what was said so far is shown greyed under the input.

Every EVERY_SECONDS of recorded speech the growing recording is transcribed again, whole, on a worker
thread with the dictation's speech model (Whisper reads a clip at a time: a whole clip gives it the
context a cut-off piece lacks), one transcription at a time; a recording that grew meanwhile is read on
the next look. The greyed line is a preview: when the recording stops, the final transcription lands
in the box as before and the line is cleared; Esc clears it too. A preview that comes back after its
recording ended is dropped, so a late one never covers the final text.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QBoxLayout, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from app.misc.thread_relay import emit_from_thread
from app.voice.dictation import DictationControl
from app.voice.recognizer import loaded_recognizer
from app.voice.recording import Recording
from engine.voice.audio import Audio

EVERY_SECONDS = 2.0  # of recorded audio between two previews: often enough to follow, cheap enough for two cores
LOOK_MS = 250  # how often the GUI thread looks whether the recording has grown by that much
# Whisper reads 30 s windows: past a minute each look costs several, so the line keeps the last preview and the
# CPU is left to the chats (a dictated message is rarely that long; the final text still has every word)
MAX_PREVIEW_SECONDS = 60.0


class LiveTranscript(QObject):
    """The greyed preview line of one tab's dictation."""

    previewed = Signal(object, str)  # the recording it was made from, the words heard so far (worker thread)
    shown = Signal(str)  # the preview now on the line

    def __init__(self, dictation: DictationControl, box: QPlainTextEdit, model_path: Callable[[], str],
                 language: Callable[[], str], parent: QWidget) -> None:
        super().__init__(parent)
        self._dictation, self._model_path, self._language = dictation, model_path, language
        self.label = QLabel(parent)
        self.label.setObjectName("liveTranscript")
        self.label.setProperty("role", "hint")  # the theme's placeholder grey: greyed, and still readable (AA)
        font = self.label.font()
        font.setItalic(True)
        self.label.setFont(font)
        self.label.setWordWrap(True)
        self.label.setAccessibleName("Words heard so far")
        self.label.hide()
        self._place_under(box)
        self._recording: Recording | None = None  # the one being previewed
        self._next_at = EVERY_SECONDS  # recorded seconds at which the next preview is made
        self._busy = False  # a preview is being transcribed
        self._timer = QTimer(self)
        self._timer.setInterval(LOOK_MS)
        self._timer.timeout.connect(self._on_look)
        self.previewed.connect(self._on_previewed)
        dictation.state_changed.connect(self._on_state_changed)

    def _place_under(self, box: QPlainTextEdit) -> None:
        """The line goes under the message box, inside the row the dictation lays out beside its button."""
        row = self._dictation.row.layout()
        assert isinstance(row, QBoxLayout)
        index = row.indexOf(box)
        row.removeWidget(box)
        column = QVBoxLayout()
        column.setSpacing(2)
        column.addWidget(box, 1)
        column.addWidget(self.label)
        row.insertLayout(index, column, 1)

    def _on_state_changed(self, state: str) -> None:
        recording = self._dictation.recorded if state == "recording" else None
        if recording is self._recording:
            return
        self._recording, self._next_at = recording, EVERY_SECONDS
        if recording is not None and self._model_path():
            self._timer.start()
        else:
            self._timer.stop()
            self._show("")

    def _on_look(self) -> None:
        recording = self._recording
        if recording is None or self._busy or not self._next_at <= recording.seconds <= MAX_PREVIEW_SECONDS:
            return
        audio = recording.audio()
        if audio is None:
            return
        self._busy = True
        self._next_at = audio.seconds + EVERY_SECONDS
        threading.Thread(target=self._preview, args=(recording, audio, self._model_path(), self._language() or None),
                         name="live-transcript", daemon=True).start()

    def _preview(self, recording: Recording, audio: Audio, model_path: str, language: str | None) -> None:
        """Worker thread: the words in the recording so far ("" where the model cannot be had: the final says why)."""
        if recording is not self._recording:  # stopped meanwhile: the final transcription needs the model now
            emit_from_thread(self, "previewed", recording, "")
            return
        try:
            text = loaded_recognizer(model_path).transcribe(audio, language).text
        except Exception:  # noqa: BLE001 - a preview only; the final transcription reports the problem
            text = ""
        emit_from_thread(self, "previewed", recording, text)

    def _on_previewed(self, recording: Recording, text: str) -> None:
        self._busy = False
        if recording is self._recording and text:
            self._show(text)

    def _show(self, text: str) -> None:
        self.label.setText(text)
        self.label.setVisible(bool(text))
        self.shown.emit(text)
