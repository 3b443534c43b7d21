"""The PortAudio output (sounddevice), and which output reads aloud.

This machine has no sound card (nor the PortAudio library), so a stand-in `sounddevice` makes the streams:
like PortAudio, it calls the stream's callback on a thread of its own with a fixed number of frames and a
buffer of exactly that size, which the callback must fill. What is tested is what the callback hands the
device (the PCM given, in order, silence only after it) and when `playback_finished` is said: once, on
the GUI thread, after the callback was asked for more than the last sample; never after `stop`.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QApplication

from app.voice.audio_out import TAIL_MS, AudioOutUnavailable
from app.voice.sounddevice_out import SoundDeviceAudioOut
from app.voice.speaker import open_audio_out

FRAMES = 256  # each callback's block
LATENCY = 0.05  # what the stand-in stream reports as its output latency, in seconds


class Stream:
    """A stand-in RawOutputStream: `pull` is PortAudio asking for blocks, on its own thread."""

    latency = LATENCY

    def __init__(self, samplerate: int, channels: int, dtype: str, callback: Any) -> None:
        self.samplerate, self.channels, self.dtype, self.callback = samplerate, channels, dtype, callback
        self.played, self.active, self.closed = bytearray(), False, False

    def start(self) -> None:
        self.active = True

    def pull(self, blocks: int = 1) -> None:
        assert self.active and not self.closed, "PortAudio calls no callback of a stream that is not running"
        problems: list[BaseException] = []

        def device() -> None:
            for _ in range(blocks):
                outdata = memoryview(bytearray(FRAMES * 2))  # like cffi's buffer: its size cannot change
                try:
                    self.callback(outdata, FRAMES, None, None)
                except BaseException as error:  # noqa: BLE001 - handed to the test's thread
                    problems.append(error)
                    return
                self.played += outdata

        thread = threading.Thread(target=device, name="portaudio")
        thread.start()
        thread.join()
        if problems:
            raise problems[0]

    def abort(self) -> None:
        self.active = False

    def close(self) -> None:
        self.active, self.closed = False, True


class Device:
    """A stand-in for the sounddevice module."""

    class CallbackAbort(Exception):
        pass

    def __init__(self, speaker: bool = True, refuse: str = "") -> None:
        self.streams: list[Stream] = []
        self._speaker, self._refuse = speaker, refuse

    def query_devices(self, kind: str) -> dict[str, Any]:
        assert kind == "output"
        if not self._speaker:
            raise ValueError("No output device matching ''")
        return {"name": "Speakers", "default_samplerate": 48000.0}

    def RawOutputStream(self, **options: Any) -> Stream:  # sounddevice's name
        if self._refuse:
            raise OSError(self._refuse)
        self.streams.append(Stream(**options))
        return self.streams[-1]


def heard(out: SoundDeviceAudioOut) -> list[str]:
    said: list[str] = []
    out.playback_finished.connect(lambda: said.append(threading.current_thread().name))
    return said


def test_the_callback_hands_over_the_pcm_in_order_and_it_is_played_once_after_the_last_sample(  # type: ignore[no-untyped-def]
        qtbot) -> None:
    device = Device()
    out = SoundDeviceAudioOut(sounddevice=device)
    said = heard(out)
    first, second = bytes(range(256)) * 3, b"\x07\x01" * 300  # 384 and 300 frames
    out.play(first, 22050)
    stream = device.streams[-1]
    assert (stream.samplerate, stream.channels, stream.dtype, stream.active) == (22050, 1, "int16", True)
    stream.pull()
    out.play(second, 22050)  # the next sentence, while the first plays: the same stream
    out.finish()
    stream.pull(2)  # the rest of the first, then the last 172 frames of the second and silence after them
    QApplication.processEvents()
    assert not out._tail.isActive() and not said  # the last sample was only just handed over
    assert len(device.streams) == 1 and bytes(stream.played[:len(first + second)]) == first + second
    stream.pull()  # asked for more after the last sample: it has left the callback
    qtbot.waitUntil(out._tail.isActive, timeout=2000)
    assert out._tail.interval() == TAIL_MS + round(LATENCY * 1000)  # the device's own buffer, then the tail
    with qtbot.waitSignal(out.playback_finished, timeout=2000):
        pass
    QApplication.processEvents()
    assert said == ["MainThread"] and not out._tail.isActive()
    assert stream.closed  # the device is not held open between answers
    assert bytes(stream.played) == first + second + bytes(4 * FRAMES * 2 - len(first + second))
    out.play(first, 22050)  # the next answer opens the device again
    assert len(device.streams) == 2 and device.streams[-1].active


def test_a_stopped_reading_is_never_said_to_have_played(qtbot) -> None:  # type: ignore[no-untyped-def]
    device = Device()
    out = SoundDeviceAudioOut(sounddevice=device)
    said = heard(out)
    out.play(b"\x01\x00" * FRAMES, 22050)
    out.finish()
    device.streams[-1].pull(2)  # played and run dry: the callback's word is on its way to the GUI thread
    out.stop()  # before it lands
    QApplication.processEvents()
    assert not out._tail.isActive() and not said and device.streams[-1].closed
    out.play(b"\x02\x00" * FRAMES, 22050)
    out.finish()
    device.streams[-1].pull(2)
    qtbot.waitUntil(out._tail.isActive, timeout=2000)
    out.stop()  # in the tail: the answer was cut short, it did not play to its end
    QApplication.processEvents()
    assert not out._tail.isActive() and not said and device.streams[-1].closed
    assert bytes(device.streams[-1].played) == b"\x02\x00" * FRAMES + bytes(FRAMES * 2)


def test_a_sentence_after_finish_is_waited_for(qtbot) -> None:  # type: ignore[no-untyped-def]
    device = Device()
    out = SoundDeviceAudioOut(sounddevice=device)
    said = heard(out)
    out.play(b"\x01\x00" * FRAMES, 22050)
    stream = device.streams[-1]
    out.finish()
    stream.pull(2)  # run dry: its word is on the way
    out.play(b"\x02\x00" * FRAMES, 22050)  # a last sentence after all: that word no longer counts
    QApplication.processEvents()
    assert not out._tail.isActive() and not said
    stream.pull()
    out.finish()
    with qtbot.waitSignal(out.playback_finished, timeout=2000):
        stream.pull()
    assert said == ["MainThread"]
    assert bytes(stream.played) == b"\x01\x00" * FRAMES + bytes(FRAMES * 2) + b"\x02\x00" * FRAMES + bytes(FRAMES * 2)


def test_finish_with_nothing_playing_is_played_after_the_tail(qtbot) -> None:  # type: ignore[no-untyped-def]
    out = SoundDeviceAudioOut(sounddevice=Device())
    with qtbot.waitSignal(out.playback_finished, timeout=2000):
        out.finish()  # as QtAudioOut: no stream, nothing to wait for


def test_deleting_it_with_its_tab_closes_the_stream(qtbot) -> None:  # type: ignore[no-untyped-def]
    import shiboken6

    device, tab = Device(), QObject()
    SoundDeviceAudioOut(tab, sounddevice=device).play(b"\x01\x00" * FRAMES, 22050)
    assert device.streams[-1].active
    shiboken6.delete(tab)
    assert device.streams[-1].closed


def test_without_a_speaker_or_one_that_will_not_open_it_says_so(qtbot) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(AudioOutUnavailable, match="No speaker was found .No output device matching"):
        SoundDeviceAudioOut(sounddevice=Device(speaker=False))
    out = SoundDeviceAudioOut(sounddevice=Device(refuse="Device unavailable [PaErrorCode -9985]"))
    with pytest.raises(AudioOutUnavailable, match=r"The speaker could not be opened: Device unavailable"):
        out.play(b"\x01\x00" * FRAMES, 22050)
    assert out.queue.take(4) == (bytes(4), None)  # what it was given is not kept for a later stream


class _FailingImport:
    """A finder whose `sounddevice` raises what sounddevice raises when the PortAudio library is not found."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name == "sounddevice":
            raise OSError("PortAudio library not found")
        return None


@pytest.fixture
def no_qt_multimedia(monkeypatch: pytest.MonkeyPatch) -> None:
    import PySide6

    monkeypatch.setitem(sys.modules, "PySide6.QtMultimedia", None)  # what `import` sees for a module not installed
    monkeypatch.delattr(PySide6, "QtMultimedia", raising=False)


def test_where_qt_multimedia_loads_it_plays(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from app.voice.audio_out import QtAudioOut
    from tests.app.voice.test_audio_out import multimedia

    media, sinks = multimedia()
    monkeypatch.setitem(sys.modules, "PySide6.QtMultimedia", media)
    monkeypatch.setitem(sys.modules, "sounddevice", Device())
    out = open_audio_out()
    assert isinstance(out, QtAudioOut)
    out.play(b"\x01\x00", 16000)
    assert sinks[-1].rate == 16000


def test_without_qt_multimedia_sounddevice_plays(qtbot, no_qt_multimedia: None,  # type: ignore[no-untyped-def]
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    device = Device()
    monkeypatch.setitem(sys.modules, "sounddevice", device)
    out = open_audio_out()
    assert isinstance(out, SoundDeviceAudioOut)
    out.play(b"\x01\x00", 16000)
    assert device.streams[-1].samplerate == 16000


def test_without_either_it_says_what_to_install(qtbot, no_qt_multimedia: None,  # type: ignore[no-untyped-def]
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sounddevice", None)
    with pytest.raises(AudioOutUnavailable) as raised:
        open_audio_out()
    assert str(raised.value).startswith("Reading aloud needs the sounddevice package (pip install "
                                        "'hearth-chat[voice]'")
    assert str(raised.value).endswith(" or Qt Multimedia (pip install PySide6-Addons, PySide6's own version).")
    monkeypatch.delitem(sys.modules, "sounddevice")
    monkeypatch.setattr(sys, "meta_path", [_FailingImport(), *sys.meta_path])
    with pytest.raises(AudioOutUnavailable) as raised:
        open_audio_out()
    assert "sudo apt install libportaudio2" in str(raised.value) and "pip install PySide6-Addons" in str(raised.value)
    assert str(raised.value).startswith("Reading aloud needs the PortAudio library (Debian, Ubuntu: sudo apt")


def test_a_missing_speaker_is_not_said_to_need_an_install(qtbot, no_qt_multimedia: None,  # type: ignore[no-untyped-def]
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sounddevice", Device(speaker=False))
    with pytest.raises(AudioOutUnavailable) as raised:
        open_audio_out()
    assert str(raised.value).startswith("No speaker was found") and "pip install" not in str(raised.value)
