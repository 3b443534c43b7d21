"""The engine thread: a plain loop that drains its inbox, steps, and emits.

It blocks on the inbox only when there is no work, so a Cancel lands between
two steps. It reports through the one callable it was given and knows nothing
of Qt. A local model is a runner with its scheduler; a remote one (backend
"remote") is a RemoteEngine in their place, which takes the same commands and
whose step hands on what its streams delivered.
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

from engine.parsing.prompt import plain_turn, prepare_turn
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
    ModelConfig,
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
from engine.remote.engine import RemoteEngine, RemoteUnavailable
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
        self._remote: RemoteEngine | None = None
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
        busy = self._busy()
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

    def _busy(self) -> bool:
        work = self._remote or self._scheduler
        return work is not None and work.has_work()

    def _apply(self, command: Command) -> None:
        work = self._remote or self._scheduler  # without a model no turn runs, so there is none to end
        if isinstance(command, LoadModel):
            self._load(command)
        elif isinstance(command, Submit):
            self._submit(command)
        elif isinstance(command, Cancel):
            if work is not None:
                self._emit_all(work.cancel(command.chat_id))
        elif isinstance(command, CloseChat):
            if work is not None:
                self._emit_all(work.close(command.chat_id))
        else:  # send() refuses these; only a put around it gets here, and that is the engine's bug
            raise TypeError(f"the engine cannot apply {command!r}")

    def _submit(self, command: Submit) -> None:
        if self._remote is not None:
            self._emit_all(self._remote.submit(command))
            return
        if self._runner is None or self._scheduler is None:
            self._refuse(command.chat_id, "No model is loaded yet. Wait for loading to finish or pick a model in Settings.")
            return
        try:
            if command.prompt is not None:
                text, setup = command.prompt, plain_turn(self._runner.output_format)
            else:
                text, setup = prepare_turn(self._runner.render_chat, self._runner.output_format, command)
            prompt = self._runner.tokenize(text)
        except Exception as error:  # a template from a model file can fail in many ways
            self._refuse(command.chat_id, f"Could not format this conversation for the model: {error}")
            return
        self._emit_all(self._scheduler.submit(command.chat_id, prompt, command.sampling, setup))
        if any(sequence.chat_id == command.chat_id for sequence in self._scheduler.waiting):
            self._emit(TurnQueued(command.chat_id, len(prompt)))

    def _refuse(self, chat_id: str, message: str) -> None:
        self._emit(ChatError(chat_id, message))
        self._emit(TurnFinished(chat_id, "error", TurnStats(0, 0, 0, 0.0, 0.0, 0.0), "", message))

    def _load(self, command: LoadModel) -> None:
        if command.config.backend == "remote":
            self._connect(command.config)
            return
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

    def _connect(self, config: ModelConfig) -> None:
        """A remote server: ask for its models (the connection test) and answer through it from now on."""
        had_model = self._runner is not None or self._remote is not None
        self._emit(ModelLoading(config.path, 0.0, f"Connecting to {config.path}"))
        try:
            remote = RemoteEngine.connect(config)
        except RemoteUnavailable as error:
            self._emit(ModelLoadFailed(config.path, str(error), had_model))
            return
        self._swap_runner(remote)

    def _swap_runner(self, runner: Runner | RemoteEngine) -> None:
        work = self._remote or self._scheduler
        if work is not None:
            self._emit_all(work.cancel_all("The model was changed; send again to continue."))
        self._close_runner()
        if isinstance(runner, RemoteEngine):
            self._remote = runner
        else:
            self._runner, self._scheduler = runner, Scheduler(runner)
        self.model_info = runner.info
        self._emit(ModelLoaded(runner.info))
        self._emit_stats(time.perf_counter())

    def _close_runner(self) -> None:
        if self._runner is not None:
            self._runner.close()
        if self._remote is not None:
            self._remote.shutdown()
        self._runner = self._scheduler = self._remote = None

    def _step(self) -> None:
        work = self._remote or self._scheduler
        if work is None or not work.has_work():
            return
        self.steps += 1
        self._emit_all(work.step())

    def _emit_all(self, events: list[Event]) -> None:
        for event in events:
            self._emit(event)

    # ------------------------------------------------------------ stats

    def _maybe_emit_stats(self) -> None:
        if self._scheduler is None and self._remote is None:
            return
        now = time.perf_counter()
        busy = self._busy()
        if busy and now - self._last_stats >= self._stats_interval_s or (self._was_busy and not busy):
            self._emit_stats(now)
        self._was_busy = busy

    def _emit_stats(self, now: float) -> None:
        self._last_stats = now
        scheduler, runner = self._scheduler, self._runner
        if self._remote is not None:
            self._emit(self._remote_stats(now, self._remote))
            return
        if scheduler is None or runner is None:
            return
        tokens_per_second, per_chat = self._speeds(now, scheduler.sampled_log, scheduler.has_work())
        drafted, accepted = self._recent_draft_counts(scheduler, now)
        self._emit(
            EngineStats(
                tokens_per_second=tokens_per_second,
                chat_tokens_per_second=per_chat,
                slots_busy=scheduler.slots_busy(),
                slots_total=len(scheduler.slots),
                kv_cache_bytes=runner.kv_cache_bytes(),
                model_bytes=runner.info.model_bytes,
                total_generated_tokens=self._total_generated,
                drafted_tokens=drafted,
                accepted_tokens=accepted,
            )
        )

    def _remote_stats(self, now: float, remote: RemoteEngine) -> EngineStats:
        """No local memory to show: the server holds the model; its latency instead."""
        tokens_per_second, per_chat = self._speeds(now, remote.sampled_log, remote.has_work())
        busy = remote.slots_busy()
        return EngineStats(tokens_per_second, per_chat, busy, max(busy, remote.info.slots), 0, 0,
                           self._total_generated, remote.latency_ms)

    def _speeds(self, now: float, log_: deque[tuple[float, str]], busy: bool
                ) -> tuple[float, tuple[tuple[str, float], ...]]:
        """All chats' and each chat's tokens/s over the last few seconds, from the tokens sampled since last time."""
        self._total_generated += len(log_)
        self._recent.extend(log_)
        log_.clear()
        while self._recent and now - self._recent[0][0] > SPEED_WINDOW_S:
            self._recent.popleft()
        window = min(SPEED_WINDOW_S, max(now - self._recent[0][0], self._stats_interval_s)) if self._recent else 1.0
        per_chat: dict[str, int] = {}
        for _, chat_id in self._recent:
            per_chat[chat_id] = per_chat.get(chat_id, 0) + 1
        if not busy:
            return 0.0, ()
        return len(self._recent) / window, tuple((c, n / window) for c, n in per_chat.items())

    def _recent_draft_counts(self, scheduler: Scheduler, now: float) -> tuple[int, int]:
        """Tokens drafted and accepted over the speed window: the gauge's acceptance rate."""
        self._recent_drafts.extend(scheduler.draft_log)
        scheduler.draft_log.clear()
        while self._recent_drafts and now - self._recent_drafts[0][0] > SPEED_WINDOW_S:
            self._recent_drafts.popleft()
        return sum(d for _, d, _ in self._recent_drafts), sum(a for _, _, a in self._recent_drafts)
