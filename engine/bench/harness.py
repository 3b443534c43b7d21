"""An EngineLoop driven by the benchmark: timestamped events, one turn per chat, waits that end."""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass, replace
from typing import Sequence

from engine.loop import EngineLoop
from engine.protocol import (
    CloseChat, EngineError, Event, LoadModel, ModelConfig, ModelInfo, ModelLoaded, ModelLoadFailed, Submit, Token, TurnFinished, TurnStarted,
)

WAIT_S = 900.0  # longest wait for one event: a slow machine, never a hang


class BenchError(Exception):
    pass


@dataclass
class Turn:
    chat_id: str
    submitted_at: float
    first_token_at: float | None = None
    finished: TurnFinished | None = None
    prompt_tokens: int = 0
    reused_tokens: int = 0

    @property
    def ttft_s(self) -> float:
        if self.first_token_at is not None:
            return self.first_token_at - self.submitted_at
        return self.finished.stats.time_to_first_token_s if self.finished else 0.0


class Bench:
    """An EngineLoop with an inbox of timestamped events."""

    def __init__(self) -> None:
        self.events: queue.Queue[tuple[float, Event]] = queue.Queue()
        self.loop = EngineLoop(lambda event: self.events.put((time.perf_counter(), event)))

    def next_event(self) -> tuple[float, Event]:
        try:
            at, event = self.events.get(timeout=WAIT_S)
        except queue.Empty:
            raise BenchError(f"The engine sent nothing for {WAIT_S:.0f} s.") from None
        if isinstance(event, EngineError):  # the engine thread has ended: nothing more will come
            raise BenchError(event.message)
        return at, event

    def load(self, config: ModelConfig) -> ModelInfo:
        self.loop.send(LoadModel(config))
        while True:
            _, event = self.next_event()
            if isinstance(event, ModelLoaded):
                return event.info
            if isinstance(event, ModelLoadFailed):
                raise BenchError(event.message)

    def serve(self, submits: Sequence[Submit]) -> list[Turn]:
        """Submit all at once; wait until every one has finished."""
        turns = {}
        for submit in submits:
            turns[submit.chat_id] = Turn(submit.chat_id, time.perf_counter())
            self.loop.send(submit)
        while any(t.finished is None for t in turns.values()):
            at, event = self.next_event()
            turn = turns.get(getattr(event, "chat_id", ""))
            if turn is None:
                continue
            if isinstance(event, TurnStarted):
                turn.prompt_tokens, turn.reused_tokens = event.prompt_tokens, event.reused_tokens
            elif isinstance(event, Token) and turn.first_token_at is None and event.text:
                turn.first_token_at = at
            elif isinstance(event, TurnFinished):
                if event.reason not in ("stop", "length"):
                    raise BenchError(f"Chat {event.chat_id} ended with {event.reason}: {event.message}")
                turn.finished = event
        return list(turns.values())


def decode_timed(bench: Bench, requests: list[Submit]) -> tuple[float, list[Turn]]:
    """Prompts into the cache with one-token turns, then the timed turns: seconds, turns. (A constrained
    request's one-token turn reads the vocabulary for its masks too, so that is not timed either.)"""
    bench.serve([replace(r, sampling=replace(r.sampling, max_new_tokens=1)) for r in requests])
    started = time.perf_counter()
    turns = bench.serve(requests)
    elapsed = time.perf_counter() - started
    for request in requests:
        bench.loop.send(CloseChat(request.chat_id))
    return elapsed, turns
