"""A spoken conversation in the real window (offscreen): hands-free, Answer aloud and "Keep listening after each
answer" on. The real Piper voice's sentences are played in as the microphone, the real Whisper base model writes
them down, the scripted bridge answers, the real voice speaks the answer into a speaker the test holds, and once
the test lets that speaker finish, the microphone listens again by itself. Everything asserted is state and text:
the speaker plays to its end only when the test says so, so "never while it plays" is checked, not timed."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.voice.conversation import LISTENING_TIP
from app.voice.mic_button import IDLE_TIP, WAITING_TIP
from app.voice.microphone import Frames
from engine.voice.audio import Audio
from engine.voice.wer import word_error_rate
from tests.app.voice.played_microphone import PlayedMicrophone
from tests.app.voice.test_dictation import LONG, MAX_WER, SAID, spoken
from tests.app.voice.test_read_aloud import RecordingOut

SECOND = "What time does the bakery open tomorrow morning?"
ANSWER = ("The weather is nice today. ", "Please turn off the kitchen lights.")


class TakingTurnsMicrophone(PlayedMicrophone):
    """Plays the first recording when it is first started, the second the next time, and so on."""

    def __init__(self, *turns: Audio) -> None:
        super().__init__(turns[0])
        self._turns = turns

    def start(self, on_frames: Frames) -> None:
        self._samples = self._turns[min(self.starts, len(self._turns) - 1)].samples
        super().start(on_frames)


def then_quiet(said: Audio) -> Audio:
    """What was said, then three seconds of silence: more than the pause."""
    return Audio(np.concatenate([said.samples, np.zeros(3 * said.sample_rate, np.float32)]), said.sample_rate)


def conversing_tab(window, voice_model: str, speech_model: str, *texts: str) -> tuple:  # type: ignore[no-untyped-def]
    for key, value in (("voice.stt_model", speech_model), ("voice.tts_voice", voice_model), ("voice.hands_free", True),
                       ("voice.pause_seconds", 1.0), ("voice.keep_listening", True)):
        window.settings.set(key, value)
    tab = window.current_tab()
    microphone = TakingTurnsMicrophone(*(then_quiet(spoken(voice_model, text)) for text in texts))
    tab.dictation.use_microphone(microphone)
    speaker = RecordingOut()
    tab.read_aloud._make_out = lambda: speaker
    tab.dictation.clock = iter([10.0, 10.1]).__next__  # pressed and released 0.1 s apart: a click
    tab.answer_aloud.switch.click()
    assert tab.answer_aloud.switch.isChecked()
    return tab, microphone, speaker


def say_first_message(qtbot, tab) -> None:  # type: ignore[no-untyped-def]
    qtbot.mouseClick(tab.dictation.button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(tab.messages), timeout=LONG)  # the pause ended it; it was written down and sent
    assert tab.messages[-1].role == "user" and word_error_rate([(SAID, tab.messages[-1].content)]) <= MAX_WER
    assert tab.answering and tab.conversation.waiting


def answer(qtbot, window, tab, speaker: RecordingOut) -> None:  # type: ignore[no-untyped-def]
    """The scripted model answers two sentences; the real voice speaks them into the held speaker."""
    window.bridge.begin_turn(tab.chat_id)
    for token in ANSWER:
        window.bridge.token_received.emit(tab.chat_id, token)
    window.bridge.finish(tab.chat_id, "".join(ANSWER))
    qtbot.waitUntil(lambda: speaker.finishing, timeout=LONG)  # the whole answer is made and handed to the speaker
    QApplication.processEvents()


def waits_look(tab) -> bool:  # type: ignore[no-untyped-def]
    button = tab.dictation.button
    return bool(button.property("waiting")) and button.toolTip() == WAITING_TIP


def test_talking_back_and_forth_without_touching_anything(scripted_window, qtbot,  # type: ignore[no-untyped-def]
                                                          voice_model: str, speech_model: str) -> None:
    window = scripted_window()
    tab, microphone, speaker = conversing_tab(window, voice_model, speech_model, SAID, SECOND)
    say_first_message(qtbot, tab)
    assert waits_look(tab) and not tab.dictation.recording and microphone.starts == 1
    answer(qtbot, window, tab, speaker)
    assert len(speaker.played) == 2 and all(len(pcm) > 22050 for pcm, _, _ in speaker.played)  # both sentences
    assert not tab.answering and tab.read_aloud.speaking
    assert tab.conversation.waiting and not tab.dictation.recording and microphone.starts == 1  # the speaker plays
    speaker.play_out()  # the answer has been heard to its end
    assert tab.dictation.recording and microphone.starts == 2 and not tab.conversation.waiting
    assert tab.dictation.button.toolTip() == LISTENING_TIP and not tab.dictation.button.property("waiting")
    qtbot.waitUntil(lambda: len(tab.messages) == 3, timeout=LONG)  # the second message, by the pause again
    assert [m.role for m in tab.messages] == ["user", "assistant", "user"]
    assert tab.messages[1].content == "".join(ANSWER)
    second = tab.messages[2]
    assert second.dictation is not None and word_error_rate([(SECOND, second.content)]) <= MAX_WER, second.content
    assert tab.answering and tab.conversation.waiting and waits_look(tab)  # and it goes on
    window.bridge.begin_turn(tab.chat_id)
    window.bridge.token_received.emit(tab.chat_id, ANSWER[0])
    qtbot.waitUntil(lambda: len(speaker.played) == 3, timeout=LONG)  # the second answer's first sentence plays
    window.stop_current()  # Stop (Esc in the window): the answer, its voice and the conversation
    assert speaker.stops >= 1 and not tab.read_aloud.speaking and not tab.conversation.waiting
    assert tab.dictation.button.toolTip() == IDLE_TIP and not tab.dictation.button.property("waiting")
    assert not tab.dictation.recording and microphone.starts == 2


def test_a_click_on_the_microphone_while_it_waits_ends_the_conversation(scripted_window, qtbot,  # type: ignore[no-untyped-def]
                                                                        voice_model: str, speech_model: str) -> None:
    window = scripted_window()
    tab, microphone, speaker = conversing_tab(window, voice_model, speech_model, SAID)
    say_first_message(qtbot, tab)
    tab.dictation.clock = iter([20.0, 20.1]).__next__
    qtbot.mouseClick(tab.dictation.button, Qt.MouseButton.LeftButton)
    assert not tab.conversation.waiting and not tab.dictation.recording and microphone.starts == 1  # no recording
    assert tab.dictation.button.toolTip() == IDLE_TIP
    answer(qtbot, window, tab, speaker)  # the answer is still spoken: the click ends the listening, not the voice
    speaker.play_out()
    assert not tab.dictation.recording and microphone.starts == 1


def test_a_chat_that_is_not_shown_waits_and_esc_ends_the_listening(scripted_window, qtbot,  # type: ignore[no-untyped-def]
                                                                   voice_model: str, speech_model: str) -> None:
    window = scripted_window()
    tab, microphone, speaker = conversing_tab(window, voice_model, speech_model, SAID)
    say_first_message(qtbot, tab)
    answer(qtbot, window, tab, speaker)
    other = window.new_chat()  # the person looks at another chat while the answer is spoken
    assert window.current_tab() is other and not tab.isVisible()
    speaker.play_out()
    assert tab.conversation.waiting and not tab.dictation.recording and microphone.starts == 1
    window.tabs.setCurrentWidget(tab)  # back: now it listens
    assert tab.dictation.recording and microphone.starts == 2 and not tab.conversation.waiting
    qtbot.keyClick(tab.input, Qt.Key.Key_Escape)
    assert not tab.dictation.recording and not tab.conversation.waiting and microphone.stops == microphone.starts
    assert len(tab.messages) == 2 and tab.dictation.button.toolTip() == IDLE_TIP
