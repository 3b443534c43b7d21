"""A recording played in as the microphone: blocks of samples at its own rate, from its own thread, as PortAudio's
callback delivers them; `finished` is set once every block was handed over."""

from __future__ import annotations

import threading

import numpy as np

from app.voice.microphone import Frames
from engine.voice.audio import Audio


class PlayedMicrophone:
    def __init__(self, audio: Audio, block_seconds: float = 0.05) -> None:
        self.sample_rate = audio.sample_rate
        self._samples = audio.samples
        self._block = int(audio.sample_rate * block_seconds)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.finished = threading.Event()
        self.starts = self.stops = 0

    def start(self, on_frames: Frames) -> None:
        self.starts += 1
        self._stop.clear()
        self.finished.clear()
        self._thread = threading.Thread(target=self._play, args=(on_frames,), name="microphone", daemon=True)
        self._thread.start()

    def _play(self, on_frames: Frames) -> None:
        for start in range(0, len(self._samples), self._block):
            if self._stop.is_set():
                return
            on_frames(np.array(self._samples[start:start + self._block], dtype=np.float32))
        self.finished.set()

    def stop(self) -> None:
        self.stops += 1
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
