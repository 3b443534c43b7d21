"""A spoken conversation: with hands-free, Answer aloud and Settings > Voice's "Keep listening after each answer"
on, the microphone listens again by itself once the answer has been spoken, so the person talks back and forth
without touching anything.

The loop runs from a message that hands-free sent because the person paused (not one stopped by a click or a
key): the microphone button then waits, with a look of its own, until the answer has been written and the
speaker has played it to its end (ReadAloud's `playback_finished`), and only then listens: it never listens
while the speaker plays, or the microphone would hear the answer. A chat that is not the current tab waits
and listens when it is shown again. Esc, Stop or the microphone button end the loop; so does an answer with
nothing spoken (Answer aloud switched off, a voice that failed), or a message the person ended by hand.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Signal, SignalInstance
from PySide6.QtWidgets import QAbstractButton, QWidget

from app.voice.dictation import DictationControl
from app.voice.read_aloud import ReadAloud

LISTENING_TIP = ("Listening — pause when you are done and it is sent, and it listens again after the answer; "
                 "click to send this one and end the conversation; Esc ends it")


class SpokenConversation(QObject):
    """One tab's loop of listening, answering and speaking; `waiting`: it will listen once the answer is spoken."""

    waiting_changed = Signal(bool)

    def __init__(self, dictation: DictationControl, reader: ReadAloud, answer_aloud: QAbstractButton,
                 answering: Callable[[], bool], answering_changed: SignalInstance, enabled: Callable[[], bool],
                 tab: QWidget) -> None:
        super().__init__(tab)
        self._dictation, self._reader, self._answer_aloud = dictation, reader, answer_aloud
        self._answering, self._enabled, self._tab = answering, enabled, tab
        self.waiting = False
        self._listening = False  # the recording under way was started by the loop
        self._paused = False  # the recording under way was ended by the pause (or its length), not by hand
        dictation.too_long.connect(self._on_recording_ended_itself)
        dictation.state_changed.connect(self._on_dictation_state)
        dictation.dictated.connect(self._on_dictated)  # after the tab's own slot has sent it
        dictation.press_taken = self._on_press
        reader.playback_finished.connect(self._on_playback_finished)
        answering_changed.connect(self._on_answering_changed)
        answer_aloud.toggled.connect(self._on_answer_aloud_toggled)
        tab.installEventFilter(self)

    @property
    def on(self) -> bool:
        """Whether what the person chose lets the loop run: the setting (with hands-free) and Answer aloud."""
        return self._enabled() and self._answer_aloud.isChecked()

    def end(self) -> None:
        """Esc, Stop, a click while waiting: no more listening by itself (a recording under way goes on)."""
        self._listening = False
        self._set_waiting(False)

    def stop(self) -> None:
        """Stop: the loop ends, and a recording the loop started is dropped with it."""
        if self._listening and self._dictation.recording:
            self._dictation.cancel()
        self.end()

    def _on_answer_aloud_toggled(self, on: bool) -> None:
        if not on:
            self.end()  # nothing will be spoken, so nothing will say when to listen

    def _set_waiting(self, waiting: bool) -> None:
        if waiting != self.waiting:
            self.waiting = waiting
            self._dictation.widgets.show_waiting(waiting)
            self.waiting_changed.emit(waiting)

    def _on_recording_ended_itself(self) -> None:
        self._paused = True

    def _on_dictation_state(self, state: str) -> None:
        if state == "idle":
            self._listening = False  # heard and sent, cancelled, or nothing heard: the next recording is the person's
        if state != "recording":
            return
        self._paused = False
        if self.waiting:  # Ctrl+Space while waiting: the person took over, and ends it by hand
            self._set_waiting(False)
        elif self._listening:
            self._dictation.button.setToolTip(LISTENING_TIP)

    def _on_dictated(self, _dictation: object) -> None:
        if self._paused and self.on:
            self._set_waiting(True)  # sent: listen again once its answer has been spoken

    def _on_press(self) -> bool:
        """A press on the microphone while waiting ends the conversation instead of starting a recording."""
        if not self.waiting:
            return False
        self.end()
        return True

    def _on_answering_changed(self, answering: bool) -> None:
        if self.waiting and not answering and not self._reader.speaking:
            self.end()  # nothing will be spoken, so nothing will say when to listen

    def _on_playback_finished(self) -> None:
        self._listen_if_due()

    def _listen_if_due(self) -> None:
        if not self.waiting or self._answering() or self._reader.speaking or not self._tab.isVisible():
            return  # the next answer (a queued message, a tool round) or its voice comes first; or another tab shows
        if not self.on:
            self.end()
            return
        self._set_waiting(False)
        self._listening = True
        self._dictation.start()
        if not self._dictation.recording:
            self.end()  # no microphone, no speech model: the tab says why

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._tab and event.type() == QEvent.Type.Show and self.waiting:
            self._listen_if_due()  # back to this chat: the answer was spoken while another tab showed
        return False
