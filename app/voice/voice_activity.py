"""Hands-free listening: hearing that the person has spoken and then paused, from how loud the microphone is.

Qt-free, fed on the capture thread with the same blocks the recording keeps. The samples are cut into
windows of WINDOW_SECONDS; a window whose loudness (RMS, in dBFS) reaches the threshold is speech, one
below it is quiet. The message is over once at least MIN_SPEECH_SECONDS of speech were heard and then
`pause_seconds` of quiet in a row: a breath between two words is shorter than the pause, so a sentence
is not cut in its middle, and quiet before the first word (the person has not started yet) never ends it.
Everything is counted in samples, not on a clock, so the same recording always ends at the same place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

WINDOW_SECONDS = 0.1  # short enough to find the pause's start, long enough that one quiet syllable is not a pause
MIN_SPEECH_SECONDS = 0.3  # a cough or a click of the mouse is not a message
MIN_THRESHOLD_DB, MAX_THRESHOLD_DB = -70.0, -10.0  # Settings > Voice offers this range
MIN_PAUSE_SECONDS, MAX_PAUSE_SECONDS = 0.5, 10.0


@dataclass(frozen=True)
class PauseRule:
    """What Settings > Voice says a pause is: quieter than `threshold_db` for `pause_seconds`."""

    threshold_db: float = -40.0
    pause_seconds: float = 1.5


def loudness_db(samples: np.ndarray) -> float:
    """The RMS of `samples` in dBFS (0: full scale); -120 for silence."""
    if not len(samples):
        return -120.0
    rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64))))
    return 20.0 * math.log10(max(rms, 1e-6))


class VoiceActivity:
    """Feed it the recording's blocks; `feed` says True once the speech has been followed by the pause."""

    def __init__(self, sample_rate: int, rule: PauseRule) -> None:
        self.rule = rule
        self._window = max(int(sample_rate * WINDOW_SECONDS), 1)
        self._speech_needed = int(sample_rate * MIN_SPEECH_SECONDS)
        self._pause_needed = int(sample_rate * rule.pause_seconds)
        self._pending = np.zeros(0, np.float32)  # the start of the next window
        self.speech_samples = 0  # how much of what was heard was speech
        self.quiet_run = 0  # samples of quiet since the last speech
        self.heard = 0  # samples judged so far (whole windows)
        self.ended_at: int | None = None  # the sample at which the pause was complete

    @property
    def spoke(self) -> bool:
        return self.speech_samples >= self._speech_needed

    def feed(self, samples: np.ndarray) -> bool:
        """Judge the whole windows `samples` completes; True from the window that completes the pause on."""
        if self.ended_at is not None:
            return True
        joined = np.concatenate([self._pending, samples.astype(np.float32, copy=False)])
        whole = len(joined) // self._window * self._window
        for start in range(0, whole, self._window):
            self._judge(joined[start:start + self._window])
            if self.ended_at is not None:
                break
        self._pending = joined[whole:]
        return self.ended_at is not None

    def _judge(self, window: np.ndarray) -> None:
        self.heard += len(window)
        if loudness_db(window) >= self.rule.threshold_db:
            self.speech_samples += len(window)
            self.quiet_run = 0
            return
        self.quiet_run += len(window)
        if self.spoke and self.quiet_run >= self._pause_needed:
            self.ended_at = self.heard
