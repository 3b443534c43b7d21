"""Hands-free dictation in the real window (offscreen): one click on the microphone, a sentence spoken by the real
Piper voice and then quiet, played in as the microphone's blocks; the pause ends the recording by itself, the real
Whisper base model transcribes it and the message is sent. Where the recording ends is counted in samples, so the
test knows it exactly; nothing waits on a clock."""

from __future__ import annotations

import threading

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.chat.tab_voice import HANDS_FREE_TIP
from app.voice.voice_activity import PauseRule, VoiceActivity
from engine.voice.audio import Audio
from engine.voice.wer import word_error_rate
from tests.app.voice.played_microphone import PlayedMicrophone
from tests.app.voice.test_dictation import LONG, MAX_WER, SAID, spoken

PAUSE_S, THRESHOLD_DB = 1.0, -40.0


def said_then_quiet(voice_model: str) -> Audio:
    """The sentence, then three seconds of silence: more than the pause."""
    said = spoken(voice_model)
    return Audio(np.concatenate([said.samples, np.zeros(3 * said.sample_rate, np.float32)]), said.sample_rate)


def hands_free_tab(window, audio: Audio, speech_model: str) -> tuple:  # type: ignore[no-untyped-def]
    window.settings.set("voice.stt_model", speech_model)
    window.settings.set("voice.hands_free", True)
    window.settings.set("voice.pause_seconds", PAUSE_S)
    window.settings.set("voice.speech_threshold_db", THRESHOLD_DB)
    tab = window.current_tab()
    microphone = PlayedMicrophone(audio)
    tab.dictation.use_microphone(microphone)
    tab.dictation.clock = iter([10.0, 10.1]).__next__  # pressed and released 0.1 s apart: a click
    return tab, microphone


def test_a_pause_after_speaking_ends_the_message_and_sends_it(scripted_window, qtbot,  # type: ignore[no-untyped-def]
                                                              voice_model: str, speech_model: str) -> None:
    audio = said_then_quiet(voice_model)
    expected = VoiceActivity(audio.sample_rate, PauseRule(THRESHOLD_DB, PAUSE_S))
    assert expected.feed(audio.samples) and expected.ended_at is not None  # where the pause is complete
    window = scripted_window()
    tab, microphone = hands_free_tab(window, audio, speech_model)
    qtbot.mouseClick(tab.dictation.button, Qt.MouseButton.LeftButton)
    assert tab.dictation.recording and tab.dictation.button.toolTip() == HANDS_FREE_TIP
    qtbot.waitUntil(lambda: bool(tab.messages), timeout=LONG)  # no second click, no key: the pause stopped it
    sent = tab.messages[-1]
    assert sent.role == "user" and sent.dictation is not None and sent.content == sent.dictation.transcript
    assert word_error_rate([(SAID, sent.content)]) <= MAX_WER, sent.content
    assert sent.dictation.seconds == round(expected.ended_at / audio.sample_rate, 2)  # the speech and the pause
    assert sent.dictation.seconds < audio.seconds - 1.0  # not the quiet after it
    assert microphone.stops == 1 and not tab.dictation.recording and tab.input.toPlainText() == ""


def test_quiet_keeps_it_listening_and_esc_cancels(scripted_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    quiet = Audio(np.random.default_rng(3).uniform(-0.001, 0.001, 16000 * 4).astype(np.float32), 16000)
    tab, microphone = hands_free_tab(window, quiet, "/models/whisper")  # never loaded: nothing is transcribed
    qtbot.mouseClick(tab.dictation.button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(microphone.finished.is_set, timeout=LONG)
    QApplication.processEvents()  # the capture thread's signals, had the quiet ended it
    assert tab.dictation.recording and microphone.stops == 0  # four seconds of a quiet room: still listening
    qtbot.keyClick(tab.input, Qt.Key.Key_Escape)
    assert not tab.dictation.recording and not tab.dictation.transcribing and microphone.stops == 1
    assert not any(t.name == "dictation" for t in threading.enumerate())
    assert not tab.messages and tab.input.toPlainText() == ""


def test_hands_free_off_the_pause_does_not_stop_it(scripted_window, qtbot, voice_model: str) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    tab, microphone = hands_free_tab(window, said_then_quiet(voice_model), "/models/whisper")
    window.settings.set("voice.hands_free", False)
    qtbot.mouseClick(tab.dictation.button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(microphone.finished.is_set, timeout=LONG)
    QApplication.processEvents()
    assert tab.dictation.recording and microphone.stops == 0  # the click starts it, only the next click stops it
    assert tab.dictation.button.toolTip() != HANDS_FREE_TIP
    qtbot.keyClick(tab.input, Qt.Key.Key_Escape)
    assert not tab.dictation.recording and not tab.messages
