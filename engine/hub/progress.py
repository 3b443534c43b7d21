"""Progress of a download as frozen events: bytes, speed, time left; at most ten a second."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Callable

EMIT_EVERY_S = 0.1
SPEED_WINDOW_S = 4.0


@dataclass(frozen=True)
class DownloadProgress:
    repo_id: str
    file: str  # the file being fetched or checked now
    done_bytes: int  # of the whole model, counting what was already on disk
    total_bytes: int
    bytes_per_second: float  # over the last few seconds, received bytes only
    seconds_left: float | None  # None until there is a speed to go by
    reused_bytes: int  # on disk before this download began: not fetched again
    stage: str = "downloading"  # "checking" (hashing what is on disk), "downloading", "done"

    @property
    def fraction(self) -> float:
        return self.done_bytes / self.total_bytes if self.total_bytes else 1.0


Progress = Callable[[DownloadProgress], None]


class Meter:
    """Counts bytes and turns them into DownloadProgress events for one download."""

    def __init__(self, repo_id: str, total_bytes: int, on_progress: Progress | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.repo_id = repo_id
        self.total_bytes = total_bytes
        self.done_bytes = 0
        self.received_bytes = 0
        self.reused_bytes = 0
        self.stage = "downloading"
        self.file = ""
        self._on_progress = on_progress
        self._clock = clock
        self._samples: deque[tuple[float, int]] = deque([(clock(), 0)])
        self._last_emit = float("-inf")

    def add_done(self, count: int, reused: bool, file: str | None = None) -> None:
        self.done_bytes += count
        if file is not None:
            self.file = file
        if reused:
            self.reused_bytes += count
        elif count > 0:
            self.received_bytes += count
        self.tick()

    def tick(self, force: bool = False) -> None:
        now = self._clock()
        if self._on_progress is None or (not force and now - self._last_emit < EMIT_EVERY_S):
            return
        self._last_emit = now
        self._on_progress(self.snapshot(now))

    def snapshot(self, now: float) -> DownloadProgress:
        self._samples.append((now, self.received_bytes))
        while len(self._samples) > 2 and now - self._samples[0][0] > SPEED_WINDOW_S:
            self._samples.popleft()
        start, received = self._samples[0]
        speed = (self.received_bytes - received) / (now - start) if now > start else 0.0
        left = max(self.total_bytes - self.done_bytes, 0)
        seconds_left = left / speed if speed > 0 else (0.0 if left == 0 else None)
        return DownloadProgress(self.repo_id, self.file, self.done_bytes, self.total_bytes, speed, seconds_left,
                                self.reused_bytes, self.stage)

    def finish(self) -> None:
        self.stage = "done"
        self.tick(force=True)
