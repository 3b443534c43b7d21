"""Playing 16-bit mono PCM as it arrives: Qt Multimedia's QAudioSink pulling from a growing buffer.

Qt Multimedia is in PySide6-Addons (not in PySide6-Essentials) and on Linux needs PulseAudio's
libpulse; where it cannot be loaded, app/voice/speaker.py plays through PortAudio instead
(sounddevice_out.py), and where neither loads AudioOutUnavailable says what to install. The sink
reads from PcmSource, which hands out what has been appended so far and waits (returns no bytes) for
more, so sentences made one after another play as one stream. Once told that nothing more comes
(`finish`), the output says `playback_finished` when the sink has run dry and a short tail has passed
(the device's own buffer and the room's echo): a spoken conversation listens again only then, so the
microphone never hears the answer.
"""

from __future__ import annotations

from typing import Any, Protocol

from PySide6.QtCore import QIODevice, QObject, QTimer, Signal, SignalInstance

TAIL_MS = 300  # after the sink has taken the last bytes: what the device still buffers, and the room's echo


class AudioOutUnavailable(RuntimeError):
    """No audio output here; the message says what would give one."""


class AudioOut(Protocol):
    @property
    def playback_finished(self) -> SignalInstance:
        """Everything handed over before `finish` has been played (never after `stop`)."""
        ...

    def play(self, pcm: bytes, sample_rate: int) -> None:
        """Queue `pcm` after what is playing (starting the output on the first chunk)."""
        ...

    def finish(self) -> None:
        """Nothing more comes for now: say `playback_finished` once what was handed over has been heard."""
        ...

    def stop(self) -> None: ...


class PcmSource(QIODevice):
    """A read-only device over PCM appended while it is read."""

    def __init__(self, parent: QObject | None = None) -> None:
        if parent is None:
            super().__init__()
        else:
            super().__init__(parent)
        self._pending = bytearray()
        self.received = 0  # bytes handed to this source in all
        self.open(QIODevice.OpenModeFlag.ReadOnly)

    def append(self, pcm: bytes) -> None:
        self._pending += pcm
        self.received += len(pcm)
        self.readyRead.emit()

    def clear(self) -> None:
        self._pending.clear()

    def readData(self, maxlen: int) -> bytes:
        taken = bytes(self._pending[:maxlen])
        del self._pending[:maxlen]
        return taken

    def writeData(self, data: bytes | bytearray | memoryview, size: int, /) -> int:
        return -1

    def bytesAvailable(self) -> int:
        return len(self._pending) + super().bytesAvailable()

    def isSequential(self) -> bool:
        return True


class QtAudioOut(QObject):
    """The default output device through QAudioSink."""

    playback_finished = Signal()

    def __init__(self, parent: QObject | None = None, multimedia: Any = None) -> None:
        super().__init__(parent)
        if multimedia is None:
            try:
                from PySide6 import QtMultimedia as multimedia
            except ImportError as error:
                raise AudioOutUnavailable(
                    "Reading aloud needs Qt Multimedia: pip install PySide6-Addons (the same version as PySide6), "
                    f"and on Linux PulseAudio's libpulse ({error}).") from None
        self._multimedia: Any = multimedia
        self._sink: Any = None
        self._rate = 0
        self._finishing = False  # told that nothing more comes: waiting for the sink to run dry
        self._tail = QTimer(self)
        self._tail.setSingleShot(True)
        self._tail.setInterval(TAIL_MS)
        self._tail.timeout.connect(self.playback_finished.emit)
        self.source = PcmSource(self)

    def play(self, pcm: bytes, sample_rate: int) -> None:
        self._finishing = False
        self._tail.stop()
        if self._sink is None or sample_rate != self._rate:
            self._start(sample_rate)
        self.source.append(pcm)

    def finish(self) -> None:
        self._finishing = True
        self._check_played()

    def _check_played(self, *_state: object) -> None:
        """The sink ran dry after `finish`: IdleState (it found no bytes) or StoppedState, nothing left to read."""
        if not self._finishing or self.source.bytesAvailable() > 0:
            return
        if self._sink is not None and self._sink.state() == self._multimedia.QAudio.State.ActiveState:
            return
        self._finishing = False
        self._tail.start()

    def _start(self, sample_rate: int) -> None:
        media = self._multimedia
        audio_format = media.QAudioFormat()
        audio_format.setSampleRate(sample_rate)
        audio_format.setChannelCount(1)
        audio_format.setSampleFormat(media.QAudioFormat.SampleFormat.Int16)
        if self._sink is not None:
            self._sink.stop()
        self._sink, self._rate = media.QAudioSink(media.QMediaDevices.defaultAudioOutput(), audio_format,
                                                  self), sample_rate
        self._sink.stateChanged.connect(self._check_played)
        self._sink.start(self.source)

    def stop(self) -> None:
        self._finishing = False
        self._tail.stop()  # a reading stopped is never said to have played to its end
        if self._sink is not None:
            self._sink.stop()
            self._sink = None
        self.source.clear()
