"""Dictation in the real window (offscreen): a sentence spoken by the real Piper voice is played in as the
microphone's blocks, the real Whisper base model transcribes it on a worker thread, and its words land in the
input box; sent, the message keeps what was heard in the history and the export. No microphone on CI: the
played recording stands where PortAudio's callback would."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.voice import dictation
from app.voice.dictation import NO_MODEL
from app.voice.microphone import MicrophoneUnavailable
from app.voice.read_aloud import loaded_voice
from engine.voice.audio import Audio
from engine.voice.wer import word_error_rate
from tests.app.voice.played_microphone import PlayedMicrophone

T = TypeVar("T")

SAID = "Please turn off the kitchen lights before you leave the house."
MAX_WER = 0.25  # Whisper base on a clean synthetic voice: a word or two of eleven may differ, the sentence may not
LONG = 120_000


def spoken(voice_model: str, text: str = SAID) -> Audio:
    """`text` in the Piper voice at its own rate (22,050 Hz: the model resamples), with half a second of quiet
    before and after, as a person pauses around what they say."""
    voice = loaded_voice(voice_model)
    speech = np.frombuffer(voice.synthesize(text), "<i2").astype(np.float32) / 32768.0
    quiet = np.zeros(voice.sample_rate // 2, np.float32)
    return Audio(np.concatenate([quiet, speech, quiet]), voice.sample_rate)


def dictating_tab(window, voice_model: str, speech_model: str) -> tuple:  # type: ignore[no-untyped-def]
    window.settings.set("voice.stt_model", speech_model)
    tab = window.current_tab()
    microphone = PlayedMicrophone(spoken(voice_model))
    tab.dictation.use_microphone(microphone)
    return tab, microphone


def on_thread(function: Callable[..., T], names: list[str]) -> Callable[..., T]:
    """`function`, noting the name of the thread each call runs on."""
    def noted(*args: Any, **kwargs: Any) -> T:
        names.append(threading.current_thread().name)
        return function(*args, **kwargs)
    return noted


def test_hold_ctrl_space_speak_and_release_puts_the_words_in_the_box_and_the_message_keeps_them(  # type: ignore[no-untyped-def]
        scripted_window, qtbot, voice_model: str, speech_model: str, tmp_path: Path, monkeypatch) -> None:
    window = scripted_window()
    tab, microphone = dictating_tab(window, voice_model, speech_model)
    transcribed_on: list[str] = []
    monkeypatch.setattr(dictation, "dictation_of", on_thread(dictation.dictation_of, transcribed_on))
    levels: list[int] = []
    tab.dictation.level_changed.connect(levels.append)
    assert tab.dictation.button.isEnabled() and not tab.dictation.meter.isVisible()
    tab.input.setFocus()
    qtbot.keyPress(tab.input, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
    assert tab.dictation.recording and tab.dictation.meter.isVisible() and tab.input.toPlainText() == ""
    qtbot.waitUntil(microphone.finished.is_set, timeout=LONG)
    qtbot.waitUntil(lambda: len(levels) == -(-len(microphone._samples) // microphone._block), timeout=LONG)
    assert levels[0] == 0 and max(levels) >= 50  # quiet, then speech the meter shows well above it
    qtbot.keyRelease(tab.input, Qt.Key.Key_Space)
    assert not tab.dictation.recording and tab.dictation.transcribing and microphone.stops == 1
    qtbot.waitUntil(lambda: not tab.dictation.transcribing, timeout=LONG)
    heard = tab.input.toPlainText()
    assert word_error_rate([(SAID, heard)]) <= MAX_WER, heard
    assert transcribed_on == ["dictation"]  # the model ran on the worker; the GUI thread only took the text
    assert tab.dictation.pending is not None and tab.dictation.pending.transcript == heard
    assert tab.dictation.pending.language == "en" and tab.dictation.pending.model == Path(speech_model).name
    assert tab.dictation.pending.seconds == round(len(microphone._samples) / microphone.sample_rate, 2)  # all of it
    assert not tab.messages  # nothing is sent until the person sends it
    qtbot.keyClicks(tab.input, " Thanks")  # edited before sending: the message is the text, the dictation what was heard
    qtbot.keyClick(tab.input, Qt.Key.Key_Return)
    message = tab.messages[-1]
    assert message.content == heard + " Thanks" and message.dictation is not None
    assert message.dictation.transcript == heard and tab.dictation.pending is None
    window.bridge.begin_turn(tab.chat_id)
    window.bridge.finish(tab.chat_id, "I will.")
    markdown, exported = tmp_path / "chat.md", tmp_path / "chat.json"
    window.history_ui.export_current("markdown", markdown)
    window.history_ui.export_current("json", exported)
    qtbot.waitUntil(lambda: markdown.exists() and exported.exists(), timeout=LONG)
    stored = [m for m in json.loads(exported.read_text(encoding="utf-8"))["hearth"]["messages"]]
    assert [(m["role"], m["dictation"] and m["dictation"]["transcript"]) for m in stored] == [
        ("user", heard), ("assistant", None)]
    assert f'*Dictated ({message.dictation.seconds:.1f} s, en, {Path(speech_model).name}). Heard: "{heard}"*' \
        in markdown.read_text(encoding="utf-8")


def test_click_to_start_and_stop_then_esc_drops_the_transcription(scripted_window, qtbot,  # type: ignore[no-untyped-def]
                                                                  voice_model: str, speech_model: str) -> None:
    window = scripted_window()
    tab, microphone = dictating_tab(window, voice_model, speech_model)
    tab.dictation.clock = iter([10.0, 10.1]).__next__  # pressed and released 0.1 s apart: a click, not a hold
    qtbot.mouseClick(tab.dictation.button, Qt.MouseButton.LeftButton)
    assert tab.dictation.recording and tab.dictation.button.property("recording")  # a click keeps listening
    qtbot.waitUntil(microphone.finished.is_set, timeout=LONG)
    qtbot.mouseClick(tab.dictation.button, Qt.MouseButton.LeftButton)  # the second click stops
    assert tab.dictation.transcribing and not tab.dictation.recording
    qtbot.keyClick(tab.input, Qt.Key.Key_Escape)
    assert not tab.dictation.transcribing and not tab.dictation.button.property("recording")
    qtbot.waitUntil(lambda: not any(t.name == "dictation" for t in threading.enumerate()), timeout=LONG)
    QApplication.processEvents()  # the worker's result, queued for a transcription already cancelled
    assert tab.input.toPlainText() == "" and tab.dictation.pending is None and not tab.messages


def test_hands_free_sends_what_was_heard(scripted_window, qtbot, voice_model: str,  # type: ignore[no-untyped-def]
                                         speech_model: str) -> None:
    window = scripted_window()
    window.settings.set("voice.send_dictation", True)
    tab, microphone = dictating_tab(window, voice_model, speech_model)
    tab.dictation.clock = iter([10.0, 11.5]).__next__  # held 1.5 s: push-to-talk, the release stops
    tab.dictation.button.setFocus()  # held with the keyboard: Space on the focused button
    qtbot.keyPress(tab.dictation.button, Qt.Key.Key_Space)
    assert tab.dictation.recording
    qtbot.waitUntil(microphone.finished.is_set, timeout=LONG)
    qtbot.keyRelease(tab.dictation.button, Qt.Key.Key_Space)
    assert tab.dictation.transcribing and not tab.dictation.recording
    qtbot.waitUntil(lambda: bool(tab.messages), timeout=LONG)
    sent = tab.messages[-1]
    assert sent.role == "user" and sent.dictation is not None and sent.content == sent.dictation.transcript
    assert word_error_rate([(SAID, sent.content)]) <= MAX_WER and tab.input.toPlainText() == ""


def test_without_a_microphone_the_button_is_disabled_and_says_why(qtbot) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QPlainTextEdit, QWidget

    from app.voice.dictation import DictationControl

    problem = "Dictation needs the sounddevice package: pip install 'hearth-chat[voice]' (or pip install sounddevice)."

    def no_microphone():  # type: ignore[no-untyped-def]
        raise MicrophoneUnavailable(problem)

    parent = QWidget()
    qtbot.addWidget(parent)
    box = QPlainTextEdit(parent)
    control = DictationControl(box, lambda: "/models/whisper", parent, open_microphone=no_microphone)
    qtbot.waitUntil(lambda: control.unavailable_reason == problem)
    assert not control.button.isEnabled() and control.button.toolTip() == problem and control.microphone is None
    control.start()  # a shortcut pressed anyway: nothing records
    assert not control.recording


def test_without_a_speech_model_the_tab_says_where_to_choose_one(scripted_window, qtbot,  # type: ignore[no-untyped-def]
                                                                 voice_model: str) -> None:
    window = scripted_window()
    tab = window.current_tab()
    microphone = PlayedMicrophone(Audio(np.zeros(1600, np.float32), 16000))
    tab.dictation.use_microphone(microphone)
    qtbot.mouseClick(tab.dictation.button, Qt.MouseButton.LeftButton)
    assert not tab.dictation.recording and microphone.starts == 0
    assert tab.reason.isVisible() and tab.reason.text() == NO_MODEL


def test_a_slip_of_the_finger_records_nothing(scripted_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    window.settings.set("voice.stt_model", "/models/whisper")
    tab = window.current_tab()
    microphone = PlayedMicrophone(Audio(np.full(800, 0.1, np.float32), 16000))
    tab.dictation.use_microphone(microphone)
    tab.input.setFocus()
    qtbot.keyPress(tab.input, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(microphone.finished.is_set)
    qtbot.keyRelease(tab.input, Qt.Key.Key_Space)
    assert not tab.dictation.recording and not tab.dictation.transcribing and tab.input.toPlainText() == ""


def test_the_chosen_language_reaches_the_model_and_a_wrong_one_is_said(scripted_window, qtbot,  # type: ignore[no-untyped-def]
                                                                       voice_model: str, speech_model: str) -> None:
    window = scripted_window()
    window.settings.set("voice.language", "xx")
    tab, microphone = dictating_tab(window, voice_model, speech_model)
    tab.input.setFocus()
    qtbot.keyPress(tab.input, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(microphone.finished.is_set, timeout=LONG)
    qtbot.keyRelease(tab.input, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: not tab.dictation.transcribing, timeout=LONG)
    assert tab.reason.isVisible() and tab.reason.text() == (
        "The recording could not be transcribed: 'xx' is not a language this model knows; use an ISO 639-1 code "
        "such as en, de, fr, or leave it out to have it detected.")
    assert tab.input.toPlainText() == "" and tab.dictation.pending is None and tab.dictation.button.isEnabled()
