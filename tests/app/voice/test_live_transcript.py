"""Words shown as they are heard, in the real window (offscreen): the Piper voice's sentence is played in as the
microphone, held after its first seconds until the greyed preview of those seconds is on the line (the real Whisper
model made it on a worker), then played to its end; stopped, the final text lands in the box and the preview goes.
The microphone waits on the preview, not on a clock, so the preview is always of the same first part."""

from __future__ import annotations

import re
import threading

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.voice import live_transcript
from app.voice.live_transcript import EVERY_SECONDS
from app.voice.microphone import Frames
from engine.voice.audio import Audio
from engine.voice.wer import word_error_rate
from tests.app.voice.played_microphone import PlayedMicrophone
from tests.app.voice.test_dictation import LONG, MAX_WER, SAID, on_thread, spoken

HELD_AT_S = 2.6  # "Please turn off the kitchen lights": half a second of quiet, then about two seconds of speech


class HeldMicrophone(PlayedMicrophone):
    """Plays its recording up to `held_at`, waits there until `go_on` is set, then plays the rest."""

    def __init__(self, audio: Audio, held_at: float) -> None:
        super().__init__(audio)
        self._held_at = int(held_at * audio.sample_rate) // self._block * self._block
        self.go_on = threading.Event()
        self.held = threading.Event()

    def _play(self, on_frames: Frames) -> None:
        for start in range(0, len(self._samples), self._block):
            if start == self._held_at:
                self.held.set()
                while not self.go_on.wait(0.05):
                    if self._stop.is_set():
                        return
            if self._stop.is_set():
                return
            on_frames(np.array(self._samples[start:start + self._block], dtype=np.float32))
        self.finished.set()


def words(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


def test_the_words_heard_so_far_show_greyed_and_the_final_text_replaces_them(  # type: ignore[no-untyped-def]
        scripted_window, qtbot, voice_model: str, speech_model: str, monkeypatch) -> None:
    window = scripted_window()
    window.settings.set("voice.stt_model", speech_model)
    window.settings.set("voice.language", "en")
    tab = window.current_tab()
    microphone = HeldMicrophone(spoken(voice_model), HELD_AT_S)
    tab.dictation.use_microphone(microphone)
    live = tab.voice.live
    previewed_on: list[str] = []
    monkeypatch.setattr(live_transcript, "loaded_recognizer", on_thread(live_transcript.loaded_recognizer, previewed_on))
    shown: list[str] = []
    live.shown.connect(shown.append)
    tab.input.setFocus()
    qtbot.keyPress(tab.input, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
    assert HELD_AT_S >= EVERY_SECONDS  # so a preview is due while the microphone is held
    # The GUI thread (whose timer starts previews) waits here until the microphone is held: the first preview is
    # then always of the same 2.6 s, not of however far the microphone had got when the timer looked.
    assert microphone.held.wait(LONG / 1000)
    qtbot.waitUntil(lambda: bool(shown), timeout=LONG)
    preview = shown[0]
    heard_so_far = words(preview)
    assert 2 <= len(heard_so_far) < len(words(SAID)), preview  # the start of the sentence, not all of it
    start = " ".join(words(SAID)[: len(heard_so_far)])
    assert word_error_rate([(start, " ".join(heard_so_far))]) <= 0.34, preview
    assert live.label.isVisible() and live.label.text() == preview and tab.input.toPlainText() == ""
    assert live.label.property("role") == "hint" and live.label.font().italic()  # greyed as placeholders are (AA)
    assert previewed_on == ["live-transcript"]  # made on the worker
    microphone.go_on.set()
    qtbot.waitUntil(microphone.finished.is_set, timeout=LONG)
    qtbot.keyRelease(tab.input, Qt.Key.Key_Space)
    assert not live.label.isVisible() and shown[-1] == ""  # stopped: the preview goes, the final is being made
    qtbot.waitUntil(lambda: not tab.dictation.transcribing, timeout=LONG)
    assert word_error_rate([(SAID, tab.input.toPlainText())]) <= MAX_WER
    qtbot.waitUntil(lambda: not any(t.name == "live-transcript" for t in threading.enumerate()), timeout=LONG)
    QApplication.processEvents()  # a preview still under way when it stopped is dropped
    assert not live.label.isVisible()


def test_esc_clears_the_preview_and_no_model_means_none(scripted_window, qtbot,  # type: ignore[no-untyped-def]
                                                        voice_model: str) -> None:
    window = scripted_window()
    window.settings.set("voice.stt_model", "/no/such/whisper")  # a preview that cannot be made shows nothing
    tab = window.current_tab()
    microphone = HeldMicrophone(spoken(voice_model), HELD_AT_S)
    tab.dictation.use_microphone(microphone)
    live = tab.voice.live
    previews: list[str] = []
    live.previewed.connect(lambda _recording, text: previews.append(text), Qt.ConnectionType.DirectConnection)
    tab.input.setFocus()
    qtbot.keyPress(tab.input, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: bool(previews), timeout=LONG)
    QApplication.processEvents()  # the preview reaches the GUI thread
    assert previews == [""] and not live.label.isVisible()
    live._show("words")  # as if a preview had come
    qtbot.keyClick(tab.input, Qt.Key.Key_Escape)
    assert not tab.dictation.recording and not live.label.isVisible() and live.label.text() == ""


def test_no_preview_past_a_minute(qtbot) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QPlainTextEdit, QWidget

    from app.voice.dictation import DictationControl
    from app.voice.live_transcript import MAX_PREVIEW_SECONDS, LiveTranscript

    parent = QWidget()
    qtbot.addWidget(parent)
    box = QPlainTextEdit(parent)
    dictation = DictationControl(box, lambda: "/no/such/whisper", parent)
    live = LiveTranscript(dictation, box, lambda: "/no/such/whisper", str, parent)
    previews: list[str] = []
    live.previewed.connect(lambda _recording, text: previews.append(text), Qt.ConnectionType.DirectConnection)
    for seconds, expected in ((MAX_PREVIEW_SECONDS - 1, [""]), (MAX_PREVIEW_SECONDS + 1, [])):
        previews.clear()
        microphone = PlayedMicrophone(Audio(np.full(int(16000 * seconds), 0.1, np.float32), 16000), 1.0)
        dictation.use_microphone(microphone)
        dictation.start()
        qtbot.waitUntil(microphone.finished.is_set)
        live._on_look()  # the timer's look, now that all of it is recorded
        qtbot.waitUntil(lambda: not any(t.name == "live-transcript" for t in threading.enumerate()))
        QApplication.processEvents()  # what a look handed to the GUI thread before it ended
        assert previews == expected, seconds  # a minute and more: no look (the model would have been asked)
        dictation.cancel()
