"""Read aloud in the real window (offscreen): the real Piper voice makes each sentence's PCM off the GUI thread and
the tab hands it to the audio output. No sound is asserted (CI has no speaker): the PCM handed over is."""

from __future__ import annotations

import importlib
import threading

import pytest
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QApplication

from app.voice import read_aloud
from app.voice.audio_out import PcmSource
from app.voice.read_aloud import VoiceChoice, voice_choice
from app.voice.sounddevice_out import SoundDeviceAudioOut

ANSWER = "The weather is **nice** today. Please turn off the kitchen lights before you leave."


class RecordingOut(QObject):
    """Where the audio output would be: what was handed to it, and on which thread. Told that nothing more comes
    (`finishing`), it has played it all only when the test says so (`play_out`): a speaker the test holds."""

    playback_finished = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.played: list[tuple[bytes, int, str]] = []
        self.stops = 0
        self.finishing = False

    def play(self, pcm: bytes, sample_rate: int) -> None:
        self.played.append((pcm, sample_rate, threading.current_thread().name))
        self.finishing = False

    def finish(self) -> None:
        self.finishing = True

    def play_out(self) -> None:
        assert self.finishing, "told to play out before it was told that nothing more comes"
        self.finishing = False
        self.playback_finished.emit()

    def stop(self) -> None:
        self.stops += 1
        self.finishing = False


def test_each_sentence_is_made_off_the_gui_thread_and_handed_to_the_output(scripted_window, qtbot,  # type: ignore[no-untyped-def]
                                                                            voice_model: str, monkeypatch) -> None:
    window = scripted_window()
    window.settings.set("voice.tts_voice", voice_model)
    tab = window.current_tab()
    card = tab.view.add_message_card("assistant", ANSWER)
    out = RecordingOut()
    tab.read_aloud._make_out = lambda: out
    made_on: list[str] = []
    speak = read_aloud.speak

    def noted_speak(*args, **kwargs):  # type: ignore[no-untyped-def]
        for chunk in speak(*args, **kwargs):
            made_on.append(threading.current_thread().name)
            yield chunk

    monkeypatch.setattr(read_aloud, "speak", noted_speak)
    assert not card.read_aloud_button.isHidden() and card.read_aloud_button.text() == "Read aloud"
    qtbot.mouseClick(card.read_aloud_button, Qt.MouseButton.LeftButton)
    assert card.read_aloud_button.text() == "Stop reading"
    qtbot.waitUntil(lambda: not tab.read_aloud.reading, timeout=60_000)
    assert made_on == ["read-aloud", "read-aloud"]  # one chunk per sentence, made on the worker
    assert [(rate, thread) for _, rate, thread in out.played] == [(22050, "MainThread")] * 2
    assert all(len(pcm) > 22050 for pcm, _, _ in out.played)  # each sentence more than half a second of speech
    assert card.read_aloud_button.text() == "Read aloud" and not tab.reason.isVisible()
    assert out.finishing and tab.read_aloud.speaking  # made to its end, still coming out of the speaker
    with qtbot.waitSignal(tab.read_aloud.playback_finished, timeout=1000):
        out.play_out()
    assert not tab.read_aloud.speaking


def test_stop_drops_what_is_still_being_made(scripted_window, qtbot, voice_model: str) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    window.settings.set("voice.tts_voice", voice_model)
    tab = window.current_tab()
    card = tab.view.add_message_card("assistant", " ".join([ANSWER] * 4))
    out = RecordingOut()
    tab.read_aloud._make_out = lambda: out
    qtbot.mouseClick(card.read_aloud_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(out.played) >= 1, timeout=60_000)
    qtbot.mouseClick(card.read_aloud_button, Qt.MouseButton.LeftButton)  # again: stop
    assert not tab.read_aloud.reading and out.stops == 1 and card.read_aloud_button.text() == "Read aloud"
    assert not tab.read_aloud.speaking and not out.finishing  # a stopped reading never says it played to its end
    played = len(out.played)
    # the worker's sentence in progress, if any, arrives for a reading that is over: wait for the worker to end,
    # then let its queued signals land
    qtbot.waitUntil(lambda: not any(t.name == "read-aloud" for t in threading.enumerate()), timeout=60_000)
    QApplication.processEvents()
    assert len(out.played) == played < 8


def test_without_a_voice_the_tab_says_where_to_choose_one(scripted_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    tab = window.current_tab()
    card = tab.view.add_message_card("assistant", ANSWER)
    qtbot.mouseClick(card.read_aloud_button, Qt.MouseButton.LeftButton)
    assert tab.reason.isVisible() and "Settings > Voice" in tab.reason.text()
    assert not tab.read_aloud.reading and tab.view.add_message_card("user", "hi").read_aloud_button.isHidden()


def test_without_any_audio_output_the_tab_says_what_to_install(scripted_window, qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    for module in ("PySide6.QtMultimedia", "sounddevice"):
        try:
            importlib.import_module(module)
        except (ImportError, OSError):  # OSError: sounddevice without the PortAudio library
            pass
        else:
            pytest.skip(f"{module} loads here: a real output is used")
    window = scripted_window()
    window.settings.set("voice.tts_voice", str(tmp_path / "any.onnx"))
    tab = window.current_tab()
    qtbot.mouseClick(tab.view.add_message_card("assistant", ANSWER).read_aloud_button, Qt.MouseButton.LeftButton)
    assert "pip install PySide6-Addons" in tab.reason.text() and not tab.read_aloud.reading
    assert "sounddevice" in tab.reason.text() or "libportaudio2" in tab.reason.text()


def test_a_speaker_that_will_not_open_is_said_and_ends_the_reading(scripted_window, qtbot,  # type: ignore[no-untyped-def]
                                                                    voice_model: str) -> None:
    from tests.app.voice.test_sounddevice_out import Device

    window = scripted_window()
    window.settings.set("voice.tts_voice", voice_model)
    tab = window.current_tab()
    tab.read_aloud._make_out = lambda: SoundDeviceAudioOut(sounddevice=Device(refuse="Device unavailable"))
    card = tab.view.add_message_card("assistant", ANSWER)
    qtbot.mouseClick(card.read_aloud_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "speaker could not be opened" in tab.reason.text(), timeout=60_000)
    assert tab.reason.text() == "The speaker could not be opened: Device unavailable"
    assert not tab.read_aloud.speaking and card.read_aloud_button.text() == "Read aloud"
    qtbot.waitUntil(lambda: not any(t.name == "read-aloud" for t in threading.enumerate()), timeout=60_000)


def test_read_aloud_through_portaudio_plays_every_sentence_to_its_end(scripted_window, qtbot,  # type: ignore[no-untyped-def]
                                                                       voice_model: str) -> None:
    from tests.app.voice.test_sounddevice_out import FRAMES, Device

    window = scripted_window()
    window.settings.set("voice.tts_voice", voice_model)
    tab = window.current_tab()
    device = Device()
    tab.read_aloud._make_out = lambda: SoundDeviceAudioOut(tab.read_aloud, sounddevice=device)
    made: list[bytes] = []
    tab.read_aloud.chunk_made.connect(lambda _stop, pcm, _rate: made.append(pcm), Qt.ConnectionType.DirectConnection)
    qtbot.mouseClick(tab.view.add_message_card("assistant", ANSWER).read_aloud_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not tab.read_aloud.reading, timeout=60_000)
    speech = b"".join(made)
    assert len(made) == 2 and len(device.streams) == 1 and tab.read_aloud.speaking
    stream = device.streams[0]
    stream.pull(-(-len(speech) // (FRAMES * 2)))  # PortAudio asks for blocks until the last sample is out
    with qtbot.waitSignal(tab.read_aloud.playback_finished, timeout=5000):
        stream.pull()  # and once more: it has run dry
    assert bytes(stream.played[:len(speech)]) == speech and not any(stream.played[len(speech):])
    assert not tab.read_aloud.speaking and stream.closed


def test_the_sinks_source_hands_out_what_was_appended_in_order(qtbot) -> None:  # type: ignore[no-untyped-def]
    source = PcmSource()
    source.append(b"\x01\x02" * 10)
    source.append(b"\x03\x04" * 5)
    assert source.bytesAvailable() == 30 and source.received == 30
    assert source.read(25).data() == b"\x01\x02" * 10 + b"\x03\x04\x03\x04\x03"
    assert source.read(25).data() == b"\x04\x03\x04\x03\x04" and source.read(5).data() == b""


def test_the_choice_comes_from_settings(scripted_window) -> None:  # type: ignore[no-untyped-def]
    settings = scripted_window(show=False).settings
    assert voice_choice(None) is None and voice_choice(settings) is None
    settings.set("voice.tts_voice", "/voices/a.onnx")
    settings.set("voice.speed", 1.5)
    assert voice_choice(settings) == VoiceChoice("/voices/a.onnx", 1.5)


def test_answer_aloud_speaks_the_first_sentence_while_the_answer_still_streams(scripted_window, qtbot,  # type: ignore[no-untyped-def]
                                                                                voice_model: str) -> None:
    from tests.app.helpers import type_and_send

    window = scripted_window()
    window.settings.set("voice.tts_voice", voice_model)
    bridge, tab = window.bridge, window.current_tab()
    out = RecordingOut()
    tab.read_aloud._make_out = lambda: out
    qtbot.mouseClick(tab.answer_aloud.switch, Qt.MouseButton.LeftButton)
    assert tab.answer_aloud.switch.isChecked()
    type_and_send(qtbot, tab, "Tell me about the weather")
    bridge.begin_turn(tab.chat_id)
    for token in ("The weather ", "is nice ", "today. ", "Please turn"):
        bridge.token_received.emit(tab.chat_id, token)
    qtbot.waitUntil(lambda: len(out.played) == 1, timeout=60_000)  # the first sentence, before the answer ends
    assert tab.answering and tab.read_aloud.reading
    bridge.token_received.emit(tab.chat_id, " off the kitchen lights.")
    bridge.finish(tab.chat_id, "The weather is nice today. Please turn off the kitchen lights.")
    qtbot.waitUntil(lambda: not tab.read_aloud.reading, timeout=60_000)
    assert len(out.played) == 2 and not tab.answering
