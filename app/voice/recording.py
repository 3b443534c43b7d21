"""One dictation's recording: the microphone's blocks kept as they come (on the capture thread), whole at the end.

Qt-free, so the capture thread touches nothing of the window: it adds a block and learns how loud it
was and whether the recording is over (full, or, hands-free, ended by a pause after speech); the GUI
thread takes the whole recording when it stops. What comes after the end is not kept, so a recording
ended by a pause holds the same samples however late the GUI thread stops the microphone.
"""

from __future__ import annotations

import threading

import numpy as np

from app.voice.voice_activity import VoiceActivity
from engine.voice.audio import Audio

MIN_SECONDS = 0.2  # a recording shorter than this is a slip of the finger, not speech
MAX_SECONDS = 300.0  # five minutes: the recording stops itself (a dictated message, not a meeting)


class Recording:
    def __init__(self, sample_rate: int, max_seconds: float = MAX_SECONDS,
                 activity: VoiceActivity | None = None) -> None:
        self.sample_rate = sample_rate
        self.activity = activity  # hands-free: the pause after speech ends the recording
        self._limit = int(max_seconds * sample_rate)
        self._blocks: list[np.ndarray] = []
        self._count = 0
        self._lock = threading.Lock()

    def add(self, samples: np.ndarray) -> bool:
        """Keep a block (capture thread); True once the recording is full or a pause ended it (what comes after is
        dropped)."""
        with self._lock:
            room = self._limit - self._count
            if self.activity is not None and room > 0 and self.activity.feed(samples[:room]):
                assert self.activity.ended_at is not None
                room = min(room, self.activity.ended_at - self._count)
                self._limit = self._count + room  # over: nothing after the pause is kept
            if room > 0:
                kept = samples[:room].astype(np.float32, copy=False)
                self._blocks.append(kept)
                self._count += len(kept)
            return self._count >= self._limit

    @property
    def seconds(self) -> float:
        """How much was kept so far."""
        with self._lock:
            return self._count / self.sample_rate

    def audio(self) -> Audio | None:
        """All that was heard; None for a slip of the finger (under MIN_SECONDS), and, hands-free, where no speech
        was heard at all (a quiet room transcribed makes Whisper invent a "Thank you." that would be sent)."""
        with self._lock:
            if self.activity is not None and not self.activity.spoke:
                return None
            samples = np.concatenate(self._blocks) if self._blocks else np.zeros(0, np.float32)
        return Audio(samples, self.sample_rate) if len(samples) >= MIN_SECONDS * self.sample_rate else None
