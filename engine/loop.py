"""The engine thread: a plain loop that drains its inbox, steps, and emits.

It blocks on the inbox only when there is no work, so a Cancel lands between
two steps. It reports through the one callable it was given and knows nothing
of Qt.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import traceback
from collections import deque
from dataclasses import replace
from typing import Callable, get_args

from engine.paths import user_path
from engine.protocol import (
    Cancel,
    ChatError,
    CloseChat,
    Command,
    EngineError,
    EngineStats,
    Event,
    LoadModel,
    ModelInfo,
    ModelLoaded,
    ModelLoadFailed,
    ModelLoading,
    Shutdown,
    Submit,
    TurnFinished,
    TurnQueued,
    TurnStats,
)
from engine.runners.base import LoadCancelled, Runner, RunnerError
from engine.scheduler import Scheduler

log = logging.getLogger(__name__)
Emit = Callable[[Event], None]
SPEED_WINDOW_S = 3.0


class EngineLoop:
    def __init__(self, emit: Emit, stats_interval_s: float = 0.5) -> None:
        self._emit = emit
        self._stats_interval_s = stats_interval_s
        self._inbox: queue.Queue[Command] = queue.Queue()
        self._cancel_load = threading.Event()
        self._thread: threading.Thread | None = None
        self._runner: Runner | None = None
        self._scheduler: Scheduler | None = None
        self._last_stats = 0.0
        self._was_busy = False
        self._total_generated = 0
        self._recent: deque[tuple[float, str]] = deque()
        self._recent_drafts: deque[tuple[float, int, int]] = deque()  # (time, drafted, accepted)
        self.model_info: ModelInfo | None = None
        self.steps = 0  # engine steps with work so far: "within one step" is checked against it

    # ------------------------------------------------------------ any thread

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="hearth-engine", daemon=True)
        self._thread.start()

    def send(self, command: Command) -> None:
        """Queue a command; anything else is refused here, on the caller's thread, where the bug is."""
        if not isinstance(command, get_args(Command)):
            raise TypeError(f"EngineLoop.send takes a command ({', '.join(c.__name__ for c in get_args(Command))}), "
                            f"not {command!r}")
        self._inbox.put(command)

    def cancel_load(self) -> None:
        self._cancel_load.set()

    def shutdown(self, timeout: float = 10.0) -> None:
        self._cancel_load.set()
        self.send(Shutdown())
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # ------------------------------------------------------------ engine thread

    def _run(self) -> None:
        try:
            while self._handle_commands():
                self._step()
                self._maybe_emit_stats()
        except Exception as error:  # the window offers a restart
            log.exception("engine thread failed")
            self._emit(EngineError(f"The engine stopped: {error}\n{traceback.format_exc(limit=3)}"))
        finally:
            self._close_runner()

    def _handle_commands(self) -> bool:
        """Apply every queued command; block only when idle. False on Shutdown."""
        busy = self._scheduler is not None and self._scheduler.has_work()
        try:
            command = self._inbox.get(block=not busy, timeout=None if not busy else 0)
        except queue.Empty:
            return True
        while True:
            if isinstance(command, Shutdown):
                return False
            self._apply(command)
            try:
                command = self._inbox.get_nowait()
            except queue.Empty:
                return True

    def _apply(self, command: Command) -> None:
        if isinstance(command, LoadModel):
            self._load(command)
        elif isinstance(command, Submit):
            self._submit(command)
        elif isinstance(command, Cancel):
            if self._scheduler is not None:  # without a model no turn runs, so there is none to end
                self._emit_all(self._scheduler.cancel(command.chat_id))
        elif isinstance(command, CloseChat):
            if self._scheduler is not None:
                self._emit_all(self._scheduler.close(command.chat_id))
        else:  # send() refuses these; only a put around it gets here, and that is the engine's bug
            raise TypeError(f"the engine cannot apply {command!r}")

    def _submit(self, command: Submit) -> None:
        if self._runner is None or self._scheduler is None:
            self._refuse(command.chat_id, "No model is loaded yet. Wait for loading to finish or pick a model in Settings.")
            return
        try:
            text = command.prompt if command.prompt is not None else self._runner.render_chat(command.messages)
            prompt = self._runner.tokenize(text)
        except Exception as error:  # a template from a model file can fail in many ways
            self._refuse(command.chat_id, f"Could not format this conversation for the model: {error}")
            return
        self._emit_all(self._scheduler.submit(command.chat_id, prompt, command.sampling))
        if any(sequence.chat_id == command.chat_id for sequence in self._scheduler.waiting):
            self._emit(TurnQueued(command.chat_id, len(prompt)))

    def _refuse(self, chat_id: str, message: str) -> None:
        self._emit(ChatError(chat_id, message))
        self._emit(TurnFinished(chat_id, "error", TurnStats(0, 0, 0, 0.0, 0.0, 0.0), "", message))

    def _load(self, command: LoadModel) -> None:
        from engine.runners import load_runner  # backends import heavy libraries

        config = replace(command.config, path=user_path(command.config.path))
        self._cancel_load.clear()
        had_model = self._runner is not None

        def progress(fraction: float, message: str) -> None:
            self._emit(ModelLoading(config.path, fraction, message))

        progress(0.0, "Starting")
        try:
            runner = load_runner(config, progress, self._cancel_load.is_set)
        except LoadCancelled:
            self._emit(ModelLoadFailed(config.path, "Loading was cancelled.", had_model))
            return
        except RunnerError as error:
            self._emit(ModelLoadFailed(config.path, str(error), had_model))
            return
        except Exception as error:
            log.exception("loading %s failed", config.path)
            message = f"Could not load {config.path}: {error}"
            self._emit(ModelLoadFailed(config.path, message, had_model))
            return
        self._swap_runner(runner)

    def _swap_runner(self, runner: Runner) -> None:
        if self._scheduler is not None:
            self._emit_all(self._scheduler.cancel_all("The model was changed; send again to continue."))
        self._close_runner()
        self._runner, self._scheduler = runner, Scheduler(runner)
        self.model_info = runner.info
        self._emit(ModelLoaded(runner.info))
        self._emit_stats(time.perf_counter())

    def _close_runner(self) -> None:
        if self._runner is not None:
            self._runner.close()
        self._runner = self._scheduler = None

    def _step(self) -> None:
        if self._scheduler is None or not self._scheduler.has_work():
            return
        self.steps += 1
        self._emit_all(self._scheduler.step())

    def _emit_all(self, events: list[Event]) -> None:
        for event in events:
            self._emit(event)

    # ------------------------------------------------------------ stats

    def _maybe_emit_stats(self) -> None:
        if self._scheduler is None:
            return
        now = time.perf_counter()
        busy = self._scheduler.has_work()
        if busy and now - self._last_stats >= self._stats_interval_s or (self._was_busy and not busy):
            self._emit_stats(now)
        self._was_busy = busy

    def _emit_stats(self, now: float) -> None:
        self._last_stats = now
        scheduler, runner = self._scheduler, self._runner
        if scheduler is None or runner is None:
            return
        log_ = scheduler.sampled_log
        self._total_generated += len(log_)
        self._recent.extend(log_)
        log_.clear()
        while self._recent and now - self._recent[0][0] > SPEED_WINDOW_S:
            self._recent.popleft()
        window = min(SPEED_WINDOW_S, max(now - self._recent[0][0], self._stats_interval_s)) if self._recent else 1.0
        per_chat: dict[str, int] = {}
        for _, chat_id in self._recent:
            per_chat[chat_id] = per_chat.get(chat_id, 0) + 1
        drafted, accepted = self._recent_draft_counts(scheduler, now)
        busy = scheduler.has_work()
        self._emit(
            EngineStats(
                tokens_per_second=len(self._recent) / window if busy else 0.0,
                chat_tokens_per_second=tuple((c, n / window) for c, n in per_chat.items()) if busy else (),
                slots_busy=scheduler.slots_busy(),
                slots_total=len(scheduler.slots),
                kv_cache_bytes=runner.kv_cache_bytes(),
                model_bytes=runner.info.model_bytes,
                total_generated_tokens=self._total_generated,
                drafted_tokens=drafted,
                accepted_tokens=accepted,
            )
        )

    def _recent_draft_counts(self, scheduler: Scheduler, now: float) -> tuple[int, int]:
        """Tokens drafted and accepted over the speed window: the gauge's acceptance rate."""
        self._recent_drafts.extend(scheduler.draft_log)
        scheduler.draft_log.clear()
        while self._recent_drafts and now - self._recent_drafts[0][0] > SPEED_WINDOW_S:
            self._recent_drafts.popleft()
        return sum(d for _, d, _ in self._recent_drafts), sum(a for _, _, a in self._recent_drafts)
