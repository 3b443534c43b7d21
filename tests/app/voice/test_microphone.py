"""The microphone's own checks, model-free: what the button says where sounddevice, PortAudio or an input device
is missing (stand-in `sounddevice` modules: this VM has no sound card), and the level meter's scale."""

from __future__ import annotations

import sys
import threading
import types
from typing import Any

import numpy as np
import pytest

from app.voice.microphone import MicrophoneUnavailable, SoundDeviceMicrophone, level
from app.voice.recording import MIN_SECONDS, Recording


class _FailingImport:
    """A finder whose `sounddevice` raises what sounddevice raises when the PortAudio library is not found."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "sounddevice":
            return None
        raise OSError("PortAudio library not found")


def no_probe_running() -> None:
    """Wait for the microphone probes of windows made by earlier tests: a probe whose import of sounddevice fails
    takes the module's entry out of sys.modules, whatever a test put there meanwhile."""
    for thread in threading.enumerate():
        if thread.name == "microphone-probe":
            thread.join(60)


def test_without_sounddevice_it_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    no_probe_running()
    monkeypatch.setitem(sys.modules, "sounddevice", None)  # what `import` sees for a package not installed
    with pytest.raises(MicrophoneUnavailable) as raised:
        SoundDeviceMicrophone()
    assert str(raised.value) == ("Dictation needs the sounddevice package: pip install 'hearth-chat[voice]' "
                                 "(or pip install sounddevice).")


def test_without_portaudio_it_names_the_system_package(monkeypatch: pytest.MonkeyPatch) -> None:
    no_probe_running()
    monkeypatch.delitem(sys.modules, "sounddevice", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_FailingImport(), *sys.meta_path])
    with pytest.raises(MicrophoneUnavailable) as raised:
        SoundDeviceMicrophone()
    assert "libportaudio2" in str(raised.value) and "PortAudio library not found" in str(raised.value)


def _standin(query: Any, stream: Any = None) -> types.ModuleType:
    module = types.ModuleType("sounddevice")
    module.query_devices = query  # type: ignore[attr-defined]
    module.InputStream = stream  # type: ignore[attr-defined]
    return module


def test_without_an_input_device_it_says_to_connect_one(monkeypatch: pytest.MonkeyPatch) -> None:
    def query_devices(kind: str) -> dict[str, Any]:
        raise ValueError("No input device matching ''")

    monkeypatch.setitem(sys.modules, "sounddevice", _standin(query_devices))
    with pytest.raises(MicrophoneUnavailable) as raised:
        SoundDeviceMicrophone()
    assert str(raised.value).startswith("No microphone was found (No input device matching '')")


def test_a_device_opens_at_its_own_rate_mono_and_hands_out_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: dict[str, Any] = {}

    class Stream:
        def __init__(self, **options: Any) -> None:
            opened.update(options)
            self.closed = False

        def start(self) -> None:
            buffer = np.array([[0.5], [-0.25]], np.float32)
            opened["callback"](buffer, 2, None, None)
            buffer[:] = 0  # PortAudio reuses its buffer for the next block

        def stop(self) -> None: ...

        def close(self) -> None:
            self.closed = True

    monkeypatch.setitem(sys.modules, "sounddevice", _standin(
        lambda kind: {"name": "USB mic", "default_samplerate": 48000.0}, Stream))
    microphone = SoundDeviceMicrophone()
    blocks: list[np.ndarray] = []
    microphone.start(blocks.append)
    assert (microphone.name, microphone.sample_rate) == ("USB mic", 48000)
    assert (opened["samplerate"], opened["channels"], opened["dtype"], opened["blocksize"]) == (48000, 1, "float32", 2400)
    assert [block.tolist() for block in blocks] == [[0.5, -0.25]]
    microphone.stop()
    microphone.stop()  # twice: nothing left to close


def test_the_level_is_decibels_from_silence_to_full_scale() -> None:
    tone = np.sin(np.linspace(0, 200 * np.pi, 16000)).astype(np.float32)  # RMS 0.707: -3 dBFS
    assert level(np.zeros(800, np.float32)) == 0 and level(np.zeros(0, np.float32)) == 0
    assert level(tone) == 95 and level(tone * 0.1) == 62  # -23 dBFS


def test_a_recording_keeps_its_blocks_stops_at_its_limit_and_drops_a_slip() -> None:
    recording = Recording(16000, max_seconds=1.0)
    assert recording.audio() is None  # nothing heard
    assert not recording.add(np.full(12000, 0.5, np.float32))
    assert recording.add(np.full(12000, -0.5, np.float32))  # full: a second at 16 kHz
    assert recording.add(np.ones(100, np.float32))  # after the limit: dropped
    audio = recording.audio()
    assert audio is not None and audio.sample_rate == 16000 and len(audio.samples) == 16000
    assert audio.samples[11999] == 0.5 and audio.samples[12000] == -0.5 and audio.samples[-1] == -0.5
    slip = Recording(16000)
    slip.add(np.zeros(int(16000 * MIN_SECONDS) - 1, np.float32))
    assert slip.audio() is None
