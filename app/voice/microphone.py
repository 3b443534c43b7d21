"""The microphone behind the dictation button: start, stop, and blocks of samples at the device's own rate.

The real one is `sounddevice` (PortAudio; its wheels bring PortAudio on Windows and macOS, Linux needs
libportaudio2), imported only here and only when asked, so a window without it still opens: the
button is disabled and its tooltip says what to install. Anything with the same three members can
stand in for it (the tests play a spoken WAV through one). Blocks arrive on the capture's own thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

Frames = Callable[[np.ndarray], None]  # float32 mono samples in [-1, 1]; called on the capture's thread
FLOOR_DB = -60.0  # the level meter's left end: quieter is silence to it
BLOCK_SECONDS = 0.05  # a block each 50 ms: the level meter moves smoothly, the callback stays cheap
# PortAudio's device calls are not thread-safe: each tab's probe runs on its own thread, the speaker on the GUI thread
portaudio_lock = threading.Lock()


class MicrophoneUnavailable(RuntimeError):
    """No microphone can be used here; the message says why and what would give one."""


class Microphone(Protocol):
    sample_rate: int  # the device's rate; the speech model resamples

    def start(self, on_frames: Frames) -> None: ...

    def stop(self) -> None: ...


class SoundDeviceMicrophone:
    """The system's default input device through PortAudio, mono, float32."""

    def __init__(self) -> None:
        self._sounddevice: Any = _sounddevice()
        try:
            with portaudio_lock:
                device = self._sounddevice.query_devices(kind="input")
        except Exception as error:  # noqa: BLE001 - PortAudioError or ValueError: either way there is no input
            raise MicrophoneUnavailable(f"No microphone was found ({error}): connect one, or allow Hearth to use "
                                        "it in the system's privacy settings.") from None
        self.name = str(device.get("name", "microphone"))
        self.sample_rate = int(device.get("default_samplerate") or 16000)
        self._stream: Any = None

    def start(self, on_frames: Frames) -> None:
        def callback(indata: np.ndarray, frames: int, time: Any, status: Any) -> None:
            on_frames(indata[:, 0].copy())  # PortAudio reuses its buffer

        self.stop()
        try:
            with portaudio_lock:
                self._stream = self._sounddevice.InputStream(samplerate=self.sample_rate, channels=1,
                                                             dtype="float32",
                                                             blocksize=int(self.sample_rate * BLOCK_SECONDS),
                                                             callback=callback)
                self._stream.start()
        except Exception as error:  # noqa: BLE001 - a device taken by another program, unplugged, refused
            self._stream = None
            raise MicrophoneUnavailable(f"The microphone {self.name} could not be opened: {error}") from None

    def stop(self) -> None:
        if self._stream is not None:
            with portaudio_lock:
                self._stream.stop()
                self._stream.close()
            self._stream = None


def load_sounddevice() -> Any:
    """The sounddevice module: ImportError without it, OSError without the PortAudio library it loads.

    One import at a time: Python hands a thread that finds another thread's import of a module under way
    the half-made module when that import fails (each tab probes the microphone on a thread of its own)."""
    with portaudio_lock:
        import sounddevice
    return sounddevice


def _sounddevice() -> Any:
    try:
        sounddevice = load_sounddevice()
    except ImportError:
        raise MicrophoneUnavailable("Dictation needs the sounddevice package: pip install 'hearth-chat[voice]' "
                                    "(or pip install sounddevice).") from None
    except OSError as error:  # sounddevice is there, the PortAudio library it loads is not
        raise MicrophoneUnavailable("Dictation needs the PortAudio library: on Debian or Ubuntu sudo apt install "
                                    f"libportaudio2, on Fedora sudo dnf install portaudio ({error}).") from None
    return sounddevice


def level(samples: np.ndarray) -> int:
    """How loud a block is, 0 to 100, on a decibel scale from FLOOR_DB (silence) to 0 dBFS (full scale)."""
    if not len(samples):
        return 0
    rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64))))
    decibels = 20.0 * np.log10(max(rms, 1e-6))
    return round(min(max((decibels - FLOOR_DB) / -FLOOR_DB, 0.0), 1.0) * 100)
