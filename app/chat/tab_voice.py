"""A chat tab's voice: the speaker that reads an answer aloud and the microphone beside the input,
with what Settings > Voice says of them (the voice, the speech model and its language, Send when
transcribed, hands-free: a pause after speech ends the message and sends it).

Their problems are said where the tab shows problems (its reason line). The header's Answer aloud
switch (app/voice/answer_aloud.py) reads with this speaker; the tab makes it with its header, and then
the spoken conversation (app/voice/conversation.py: listen again once the answer has been spoken).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import QAbstractButton, QPlainTextEdit, QWidget

from app.chat.message_list import MessageList
from app.settings.store import Settings
from app.voice.conversation import SpokenConversation
from app.voice.dictation import DictationControl
from app.voice.live_transcript import LiveTranscript
from app.voice.read_aloud import ReadAloud, voice_choice
from app.voice.voice_activity import PauseRule
from engine.protocol import Dictation


HANDS_FREE_TIP = "Listening — pause when you are done and it is sent; click to stop now; Esc cancels"


class ChatVoice:
    """The tab's `read_aloud` and `dictation`, and the settings they follow."""

    def __init__(self, view: MessageList, input: QPlainTextEdit, settings: Settings | None, send: Callable[[], None],
                 show_problem: Callable[[str], None], parent: QWidget) -> None:
        self._settings, self._send = settings, send
        self.read_aloud = ReadAloud(lambda: voice_choice(settings), view, parent)  # an answer's speaker
        # The microphone beside the input: what is said lands in it; what was heard is kept with the message
        self.dictation = DictationControl(input, lambda: self._setting("voice.stt_model", ""), parent,
                                          language=lambda: self._setting("voice.language", ""))
        self.live = LiveTranscript(self.dictation, input, lambda: self._setting("voice.stt_model", ""),
                                   lambda: self._setting("voice.language", ""), parent)  # words heard so far, greyed
        self.read_aloud.failed.connect(show_problem)
        self.dictation.failed.connect(show_problem)
        self.dictation.dictated.connect(self._on_dictated)
        self.dictation.pause_rule = self._pause_rule
        self.dictation.state_changed.connect(self._on_dictation_state)

    def converse(self, answer_aloud: QAbstractButton, answering: Callable[[], bool],
                 answering_changed: SignalInstance, tab: QWidget) -> SpokenConversation:
        """The loop of Settings > Voice's "Keep listening after each answer" (with hands-free and Answer aloud)."""
        return SpokenConversation(self.dictation, self.read_aloud, answer_aloud, answering, answering_changed,
                                  lambda: bool(self._setting("voice.hands_free", False)
                                               and self._setting("voice.keep_listening", False)), tab)

    def _pause_rule(self) -> PauseRule | None:
        """Hands-free: what a pause is (None: off, the button or the key stops the recording)."""
        if not self._setting("voice.hands_free", False):
            return None
        return PauseRule(float(self._setting("voice.speech_threshold_db", -40.0)),
                         float(self._setting("voice.pause_seconds", 1.5)))

    def _on_dictation_state(self, state: str) -> None:
        if state == "recording" and self.dictation.recorded is not None and self.dictation.recorded.activity:
            self.dictation.button.setToolTip(HANDS_FREE_TIP)  # not "release to stop": a pause stops it

    def _setting(self, key: str, default: Any) -> Any:
        return self._settings.get(key) if self._settings is not None else default

    def _on_dictated(self, _dictation: Dictation) -> None:
        if self._setting("voice.send_dictation", False) or self._setting("voice.hands_free", False):
            self._send()  # what was said goes as it was heard
