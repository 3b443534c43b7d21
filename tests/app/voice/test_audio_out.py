"""The audio output's `playback_finished`: said once the sink has run dry after `finish`, never after `stop`.

Qt Multimedia is not installed where the tests run (no speaker either), so a stand-in for its QAudioSink
takes the PCM source as the real one does in pull mode and reports the states the real one reports: Active
while it has bytes to play, Idle once the source gave it nothing more. What is tested is the output's own
rule: not before the last byte has been taken and played, and a stopped reading is never said to be played.
"""

from __future__ import annotations

import enum
from types import SimpleNamespace
from typing import Any

from PySide6.QtCore import QObject, Signal

from app.voice.audio_out import QtAudioOut


class State(enum.Enum):
    ActiveState = 0
    SuspendedState = 1
    StoppedState = 2
    IdleState = 3


class Format:
    class SampleFormat(enum.Enum):
        Int16 = 2

    def setSampleRate(self, rate: int) -> None:
        self.rate = rate

    def setChannelCount(self, count: int) -> None: ...

    def setSampleFormat(self, sample_format: object) -> None: ...


class Sink(QObject):
    stateChanged = Signal(object)

    def __init__(self, device: object, audio_format: Format, parent: QObject) -> None:
        super().__init__(parent)
        self.rate, self._state, self.taken = audio_format.rate, State.StoppedState, b""
        self.source: Any = None

    def state(self) -> State:
        return self._state

    def _set(self, state: State) -> None:
        self._state = state
        self.stateChanged.emit(state)

    def start(self, source) -> None:  # type: ignore[no-untyped-def]
        self.source = source
        self._set(State.IdleState)  # nothing read yet

    def take(self) -> None:
        """Pull what the source has: playing it."""
        self.taken += bytes(self.source.read(1 << 20))
        self._set(State.ActiveState)

    def run_dry(self) -> None:
        """Played what it took; the source has no more."""
        assert not self.source.read(1 << 20)
        self._set(State.IdleState)

    def stop(self) -> None:
        self._set(State.StoppedState)


def multimedia() -> tuple[SimpleNamespace, list[Sink]]:
    sinks: list[Sink] = []

    def make_sink(*args: object) -> Sink:
        sinks.append(Sink(*args))  # type: ignore[arg-type]
        return sinks[-1]

    media = SimpleNamespace(QAudioFormat=Format, QAudioSink=make_sink, QAudio=SimpleNamespace(State=State),
                            QMediaDevices=SimpleNamespace(defaultAudioOutput=lambda: None))
    return media, sinks


def test_played_once_the_last_bytes_were_taken_and_the_sink_ran_dry(qtbot) -> None:  # type: ignore[no-untyped-def]
    media, sinks = multimedia()
    out = QtAudioOut(multimedia=media)
    out.play(b"\x01\x00" * 100, 22050)
    sink = sinks[-1]
    out.finish()  # the sink is idle, but has not taken the sentence yet
    assert sink.state() == State.IdleState and not out._tail.isActive()
    sink.take()
    out.play(b"\x02\x00" * 50, 22050)  # a last sentence after all: the earlier finish no longer counts
    sink.take()
    sink.run_dry()
    assert not out._tail.isActive()
    out.finish()  # told while the sink is already dry: what was handed over has been taken
    with qtbot.waitSignal(out.playback_finished, timeout=2000):
        pass
    assert sink.taken == b"\x01\x00" * 100 + b"\x02\x00" * 50 and len(sinks) == 1


def test_played_when_the_sink_runs_dry_after_finish_and_never_after_stop(qtbot) -> None:  # type: ignore[no-untyped-def]
    media, sinks = multimedia()
    out = QtAudioOut(multimedia=media)
    out.play(b"\x01\x00" * 100, 22050)
    sinks[-1].take()
    out.finish()
    assert not out._tail.isActive()  # still playing
    with qtbot.waitSignal(out.playback_finished, timeout=2000):
        sinks[-1].run_dry()
    out.play(b"\x01\x00" * 100, 22050)
    sinks[-1].take()
    out.finish()
    sinks[-1].run_dry()
    assert out._tail.isActive()
    out.stop()  # Stop in the tail: the answer was cut short, it did not play to its end
    assert not out._tail.isActive() and out.source.bytesAvailable() == 0
