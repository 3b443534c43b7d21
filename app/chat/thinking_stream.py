"""One turn's thinking on its way into the answer card: its text so far, and how long it has taken.

The tab buffers what arrives and hands it over on its ~30 ms tick, as it does the answer text. The
seconds are measured here, from the first thinking chunk to the first answer token (or the end of
the turn), and shown where the engine's stats have none (a remote server does not say); where the
stats count them (TurnStats.reasoning_s / reasoning_tokens) the final line says what the engine said.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from app.bridge import TurnStats
from app.chat.thinking_block import ThinkingBlock


class ThinkingStream:
    """The thinking of the turn streaming now; `reset` at each new turn."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock  # replaceable, so a test can say how long a thinking took
        self.text = ""
        self._pending: list[str] = []
        self._started: float | None = None
        self._ended: float | None = None
        self._ended_unseen = False  # the thinking ended since the last flush: the header changes

    def reset(self) -> None:
        self.text, self._started, self._ended, self._ended_unseen = "", None, None, False
        self._pending.clear()

    @property
    def pending_text(self) -> str:
        """The thinking including what the next tick will show."""
        return self.text + "".join(self._pending)

    @property
    def thinking(self) -> bool:
        """Thinking began and no answer token has come yet."""
        return self._started is not None and self._ended is None

    def append(self, chunk: str) -> None:
        if self._started is None:
            self._started = self.clock()
        self._pending.append(chunk)

    def answer_started(self) -> None:
        """The first answer token: the thinking is over (a model may think again later; the clock does not)."""
        if self.thinking:
            self._ended = self.clock()
            self._ended_unseen = True

    def seconds(self) -> float:
        """How long it thought (so far, while thinking); 0.0 when it did not."""
        if self._started is None:
            return 0.0
        return (self._ended if self._ended is not None else self.clock()) - self._started

    def flush(self) -> bool:
        """Move the pending chunks into `text`; True when the block must be redrawn (it grew, or it ended)."""
        changed, self._ended_unseen = self._ended_unseen, False
        if self._pending:
            self.text += "".join(self._pending)
            self._pending.clear()
            changed = True
        return changed

    def show(self, block: ThinkingBlock) -> None:
        """The block as it should look on this tick: the text, and the seconds while thinking."""
        block.set_text(self.text)
        if self.thinking:
            block.show_streaming(self.seconds())
        elif self.text:
            block.finish(self.seconds())

    def finish(self, block: ThinkingBlock, text: str, stats: TurnStats, interrupted: bool = False) -> float:
        """The final block (the engine's stats where it has them); returns the seconds it shows."""
        self.answer_started()
        seconds = stats.reasoning_s if stats.reasoning_s > 0 else self.seconds()
        block.set_text(text)
        if text.strip():
            block.finish(seconds, stats.reasoning_tokens, interrupted)
        return seconds if text.strip() else 0.0
