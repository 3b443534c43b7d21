"""Dictation: the microphone button beside the input box. Speak, and the words land in the box to edit and send.

Hold the button (or Ctrl+Space in the box) and talk, release to stop; or click it once to start and
again to stop. Esc cancels. While it records, a level meter under the button shows how loud the
microphone hears you. When the recording stops, the speech model of Settings > Voice transcribes it
on a worker thread (loading a model takes seconds and a recording a fraction of its length: never on
the GUI thread), and the text goes into the box at the cursor. What was heard is kept as a Dictation
and travels with the message once it is sent (the history stores it, export carries it). The
button's and the meter's looks are app/voice/mic_button.py's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from app.misc.thread_relay import emit_from_thread
from app.voice.mic_button import MicWidgets
from app.voice.microphone import (
    Microphone,
    MicrophoneUnavailable,
    SoundDeviceMicrophone,
    level,
)
from app.voice.recognizer import dictation_of
from app.voice.recording import Recording
from app.voice.voice_activity import PauseRule, VoiceActivity
from engine.protocol import Dictation
from engine.voice.audio import Audio

HOLD_S = 0.4  # a press held this long is push-to-talk (release stops); a shorter one is a click (click again stops)
NO_MODEL = ("Choose a speech-to-text model (a faster-whisper folder) in Settings > Voice to dictate; its Get voice "
            "models… downloads one.")


class DictationControl(QObject):
    """One tab's microphone button, its level meter, and the recording and transcription behind them."""

    level_changed = Signal(int)  # 0..100 (capture thread)
    too_long = Signal()  # the recording reached MAX_SECONDS, or hands-free heard the pause (capture thread)
    transcribed = Signal(object, object)  # the recording's token, a Dictation or a problem's sentence (worker thread)
    dictated = Signal(object)  # the Dictation whose text was just put in the input
    failed = Signal(str)  # a sentence for the person: no model chosen, a model that cannot load, a microphone gone
    state_changed = Signal(str)  # idle, recording or transcribing
    probed = Signal(object, object, str)  # the probe, the microphone it found (None: none) and why not (probe thread)

    def __init__(self, chat_input: QPlainTextEdit, model_path: Callable[[], str], parent: QWidget,
                 open_microphone: Callable[[], Microphone] = SoundDeviceMicrophone,
                 language: Callable[[], str] = str) -> None:
        super().__init__(parent)
        self._input, self._model_path, self._language = chat_input, model_path, language
        self.microphone: Microphone | None = None
        self.pending: Dictation | None = None  # what was heard of the text in the input, until it is sent or cleared
        self.clock: Callable[[], float] = time.monotonic
        self.pause_rule: Callable[[], PauseRule | None] = lambda: None  # hands-free: a pause after speech stops
        self.press_taken: Callable[[], bool] = lambda: False  # True: a press ends a spoken conversation's wait
        self._recorded: Recording | None = None  # None: not recording
        self._token: object | None = None  # the recording being transcribed; a cancelled one's result is dropped
        self._pressed_at: float | None = None
        self._key_held = False
        self.unavailable_reason = ""
        self._build(parent)
        self.level_changed.connect(self.meter.setValue)
        self.too_long.connect(self.stop)
        self.transcribed.connect(self._on_transcribed)
        self.probed.connect(self._on_probed)
        chat_input.installEventFilter(self)
        self.button.installEventFilter(self)  # Esc, where a click left the focus on the button
        chat_input.textChanged.connect(self._on_text_changed)
        self._set_unavailable("Looking for a microphone…")
        self._probing: object | None = object()  # the probe under way; a microphone given meanwhile wins over it
        threading.Thread(target=self._probe, args=(self._probing, open_microphone), name="microphone-probe",
                         daemon=True).start()

    def _build(self, parent: QWidget) -> None:
        widgets = MicWidgets(self._input, parent)  # mic_button.py: how they look in each state
        self.widgets, self.button, self.meter, self.row = widgets, widgets.button, widgets.meter, widgets.row
        self.button.pressed.connect(self._on_pressed)
        self.button.released.connect(self._on_released)
        self._show_state("idle")

    # ------------------------------------------------------------ the microphone

    def _probe(self, probing: object, open_microphone: Callable[[], Microphone]) -> None:
        try:
            found: Microphone | None = open_microphone()
            problem = ""
        except MicrophoneUnavailable as error:
            found, problem = None, str(error)
        emit_from_thread(self, "probed", probing, found, problem)

    def _on_probed(self, probing: object, microphone: Microphone | None, problem: str) -> None:
        if probing is not self._probing:
            return
        if microphone is None:
            self._set_unavailable(problem)
        else:
            self.use_microphone(microphone)

    def use_microphone(self, microphone: Microphone) -> None:
        self._probing = None
        self.microphone = microphone
        self.unavailable_reason = ""
        self.widgets.show_available()
        self._show_state("idle")

    def _set_unavailable(self, problem: str) -> None:
        self.microphone = None
        self.widgets.show_unavailable(problem)
        self.unavailable_reason = problem

    # ------------------------------------------------------------ recording

    @property
    def recording(self) -> bool:
        return self._recorded is not None

    @property
    def recorded(self) -> Recording | None:
        """The recording under way (None: not recording), for the words shown while listening."""
        return self._recorded

    @property
    def transcribing(self) -> bool:
        return self._token is not None

    def start(self) -> None:
        if self.recording or self.microphone is None:
            return
        if not self._model_path():
            self.failed.emit(NO_MODEL)
            return
        self._token = None  # a transcription still running for the last recording is superseded
        rule, rate = self.pause_rule(), self.microphone.sample_rate
        recording = Recording(rate, activity=VoiceActivity(rate, rule) if rule is not None else None)
        try:
            self.microphone.start(lambda samples: self._on_frames(recording, samples))
        except MicrophoneUnavailable as error:
            self.failed.emit(str(error))
            return
        self._recorded = recording
        self.meter.show_threshold(rule.threshold_db if rule is not None else None)  # where speech starts counting
        self._show_state("recording")

    def _on_frames(self, recording: Recording, samples: np.ndarray) -> None:
        """Capture thread: keep the block, say how loud it was."""
        if recording.add(samples):
            emit_from_thread(self, "too_long")
        emit_from_thread(self, "level_changed", level(samples))

    def stop(self) -> None:
        """Stop recording and transcribe what was heard."""
        if not self.recording:
            return  # a second stop: the level limit's, after the button's
        audio = self._end_recording()
        if audio is None:
            self._show_state("idle")
            return
        token = self._token = object()
        self._show_state("transcribing")
        threading.Thread(target=self._transcribe, args=(token, audio, self._model_path(), self._language() or None),
                         name="dictation", daemon=True).start()

    def cancel(self) -> None:
        """Esc: the recording is dropped, a transcription under way is ignored."""
        self._end_recording()
        self._token = None
        self._show_state("idle")

    def _end_recording(self) -> Audio | None:
        recording, self._recorded = self._recorded, None
        if recording is None or self.microphone is None:
            return None
        self.microphone.stop()
        return recording.audio()

    # ------------------------------------------------------------ transcribing (worker thread)

    def _transcribe(self, token: object, audio: Audio, model_path: str, language: str | None) -> None:
        emit_from_thread(self, "transcribed", token, dictation_of(audio, model_path, language))

    def _on_transcribed(self, token: object, result: Dictation | str) -> None:
        if token is not self._token:
            return  # cancelled, or superseded by a newer recording
        self._token = None
        self._show_state("idle")
        if isinstance(result, str):
            self.failed.emit(result)
        elif result.transcript:
            self._put_in_input(result)
            self.dictated.emit(result)

    def _put_in_input(self, dictation: Dictation) -> None:
        cursor = self._input.textCursor()
        before = self._input.toPlainText()[: cursor.position()]
        cursor.insertText((" " if before and not before[-1].isspace() else "") + dictation.transcript)
        self._input.setTextCursor(cursor)
        self._input.setFocus()
        previous = self.pending
        self.pending = dictation if previous is None else Dictation(
            f"{previous.transcript} {dictation.transcript}", dictation.language, dictation.model,
            round(previous.seconds + dictation.seconds, 2))

    def take(self) -> Dictation | None:
        """What was dictated of the message being sent (None: it was typed); the next message starts afresh."""
        taken, self.pending = self.pending, None
        return taken

    def _on_text_changed(self) -> None:
        if not self._input.toPlainText().strip():
            self.pending = None  # the box was emptied (sent, cleared): what is typed next was not dictated

    # ------------------------------------------------------------ the button and the keys

    def _on_pressed(self) -> None:
        if self.recording:
            self._pressed_at = None
            self.stop()  # the second click of click-to-start, click-to-stop
        elif self.press_taken():
            self._pressed_at = None
        else:
            self._pressed_at = self.clock()
            self.start()

    def _on_released(self) -> None:
        held = self._pressed_at is not None and self.clock() - self._pressed_at >= HOLD_S
        self._pressed_at = None
        if held and self.recording:
            self.stop()  # push-to-talk: the button was held while speaking

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if not isinstance(event, QKeyEvent):
            return False
        busy_escape = event.key() == Qt.Key.Key_Escape and (self.recording or self.transcribing)
        if kind == QEvent.Type.ShortcutOverride and busy_escape:
            event.accept()  # Esc cancels the dictation here, not the window's Stop
            return True
        if kind == QEvent.Type.KeyPress and busy_escape:
            self.cancel()
            return True
        if kind not in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease) or watched is not self._input:
            return False
        if event.key() != Qt.Key.Key_Space or event.isAutoRepeat():
            return self._key_held and event.key() == Qt.Key.Key_Space  # a held key repeats: no spaces typed
        if kind == QEvent.Type.KeyPress and event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            if self.microphone is not None and not self.recording:
                self._key_held = True
                self.start()
                return True
        elif kind == QEvent.Type.KeyRelease and self._key_held:
            self._key_held = False
            self.stop()
            return True
        return False

    def _show_state(self, state: str) -> None:
        self.widgets.show_state(state, self.microphone is not None)
        self.state_changed.emit(state)
