"""Playing 16-bit mono PCM through sounddevice (PortAudio), where Qt Multimedia is not installed.

The `voice` extra brings sounddevice for the microphone (app/voice/microphone.py), and PortAudio with it;
Qt Multimedia is in PySide6-Addons, which cannot always be installed beside the project's PySide6. This
output keeps QtAudioOut's members and rule: `play` appends, `finish` says nothing more comes, and
`playback_finished` is said once the stream has asked for samples after the last one was handed over and
the tail has passed (TAIL_MS plus the output latency PortAudio reports); never after `stop`.

PortAudio calls the callback on its own thread. The callback only takes bytes from PcmQueue (a buffer
behind a lock) and, finding it empty after `finish`, says so through a queued signal: the GUI thread
starts the tail. Each `play`, `finish` and `stop` starts a new epoch, so a word from the callback that
was queued before one of them is dropped when it lands. The stream is closed once played out (the
device is not held open between answers) and when this object is deleted with its tab.
"""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal

from app.voice.audio_out import TAIL_MS, AudioOutUnavailable
from app.voice.microphone import load_sounddevice, portaudio_lock


class SoundDeviceMissing(AudioOutUnavailable):
    """sounddevice or its PortAudio library is not installed; `fix` says what would install it."""

    def __init__(self, fix: str, reason: str) -> None:
        super().__init__(f"Reading aloud needs {fix}: {reason}.")
        self.fix = fix


class PcmQueue:
    """The bytes between the GUI thread, which appends, and PortAudio's thread, which takes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending = bytearray()
        self._finishing = False  # told that nothing more comes; not yet found empty
        self.epoch = 0  # written on the GUI thread only, read by the callback under the lock

    def append(self, pcm: bytes) -> None:
        with self._lock:
            self._pending += pcm
            self._finishing = False
            self.epoch += 1

    def finish(self) -> None:
        with self._lock:
            self._finishing = True
            self.epoch += 1

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()
            self._finishing = False
            self.epoch += 1

    def take(self, size: int) -> tuple[bytes, int | None]:
        """`size` bytes, silence after what there is; and the epoch, once, when it was found empty after `finish`."""
        with self._lock:
            if not self._pending and self._finishing:
                self._finishing = False
                return bytes(size), self.epoch
            taken = bytes(self._pending[:size])
            del self._pending[:size]
        return taken + bytes(size - len(taken)), None


class _Stream:
    """The open PortAudio stream, if any; a plain object, so the QObject's `destroyed` can still close it."""

    def __init__(self, sounddevice: Any) -> None:
        self._sounddevice, self.stream, self.sample_rate = sounddevice, None, 0

    def open(self, sample_rate: int, callback: Any) -> None:
        self.close()
        with portaudio_lock:
            stream = self._sounddevice.RawOutputStream(samplerate=sample_rate, channels=1, dtype="int16",
                                                       callback=callback)
            stream.start()
        self.stream, self.sample_rate = stream, sample_rate

    def latency_ms(self) -> int:
        return round(float(getattr(self.stream, "latency", 0.0) or 0.0) * 1000)

    def close(self) -> None:
        if self.stream is not None:
            stream, self.stream = self.stream, None
            with portaudio_lock:  # never from the callback: abort waits for it to return
                stream.abort()
                stream.close()


class SoundDeviceAudioOut(QObject):
    """The default output device through a PortAudio stream that the callback fills."""

    playback_finished = Signal()
    _ran_dry = Signal(int)  # from PortAudio's thread: the epoch in which the queue was found empty after finish

    def __init__(self, parent: QObject | None = None, sounddevice: Any = None) -> None:
        super().__init__(parent)
        self._sounddevice: Any = sounddevice if sounddevice is not None else _import_sounddevice()
        try:
            with portaudio_lock:
                self._sounddevice.query_devices(kind="output")
        except Exception as error:  # noqa: BLE001 - PortAudioError or ValueError: either way there is no output
            raise AudioOutUnavailable(f"No speaker was found ({error}): connect one, or check the system's sound "
                                      "settings.") from None
        self.queue = PcmQueue()
        self._stream = _Stream(self._sounddevice)
        self._tail = QTimer(self)
        self._tail.setSingleShot(True)
        self._tail.timeout.connect(self._on_tail_passed)
        self._ran_dry.connect(self._on_ran_dry, Qt.ConnectionType.QueuedConnection)
        self.destroyed.connect(self._stream.close)  # a tab closed while it spoke

    def play(self, pcm: bytes, sample_rate: int) -> None:
        self._tail.stop()
        self.queue.append(pcm)
        if self._stream.stream is None or sample_rate != self._stream.sample_rate:
            try:
                self._stream.open(sample_rate, self._callback)
            except Exception as error:  # noqa: BLE001 - a device taken, unplugged, or refusing the rate
                self.stop()
                raise AudioOutUnavailable(f"The speaker could not be opened: {error}") from None

    def finish(self) -> None:
        self._tail.stop()
        if self._stream.stream is None:  # nothing is playing: nothing to wait for but the tail
            self._start_tail()
        else:
            self.queue.finish()

    def stop(self) -> None:
        self._tail.stop()  # a reading stopped is never said to have played to its end
        self.queue.clear()
        self._stream.close()

    def _callback(self, outdata: Any, frames: int, time: Any, status: Any) -> None:
        """PortAudio's thread: no Qt object is touched here but the queued signal."""
        data, ran_dry = self.queue.take(len(outdata))
        outdata[:] = data
        if ran_dry is not None:
            try:
                self._ran_dry.emit(ran_dry)
            except RuntimeError:  # this object is gone (its tab closed): end the stream
                raise self._sounddevice.CallbackAbort from None

    def _on_ran_dry(self, epoch: int) -> None:
        if epoch == self.queue.epoch and self._stream.stream is not None:  # no play or stop came since
            self._start_tail()

    def _start_tail(self) -> None:
        self._tail.setInterval(TAIL_MS + self._stream.latency_ms())  # the device's buffer, then the room's echo
        self._tail.start()

    def _on_tail_passed(self) -> None:
        self._stream.close()
        self.playback_finished.emit()


def _import_sounddevice() -> Any:
    try:
        return load_sounddevice()
    except ImportError as error:
        raise SoundDeviceMissing("the sounddevice package (pip install 'hearth-chat[voice]', or pip install "
                                 "sounddevice)", str(error)) from None
    except OSError as error:  # sounddevice is there, the PortAudio library it loads is not
        raise SoundDeviceMissing("the PortAudio library (Debian, Ubuntu: sudo apt install libportaudio2; Fedora: "
                                 "sudo dnf install portaudio)", str(error)) from None
