"""The engine thread: a plain loop that drains its inbox, steps, and emits.

It blocks on the inbox only when there is no work (or until the next keep-alive
runs out), so a Cancel lands between two steps. It reports through the one
callable it was given and knows nothing of Qt. Several models may be loaded
(engine/models.py): each is a runner with its own scheduler, or a RemoteEngine
in their place (backend "remote"); a Submit names its model, and the models
with work step in turn, one step each. Loads run on a thread of their own
(engine/loading.py) and report through the inbox, so the other models keep
stepping while one loads.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import traceback
from typing import Callable, Union, get_args

from engine.engine_stats import StatsKeeper
from engine.images import can_see, cannot_see
from engine.loading import BackendLoader, LoadDone, Loader, LoadProgress
from engine.keeper import ModelKeeper
from engine.models import Clock, ModelPool
from engine.parsing.prompt import plain_turn, prepare_turn
from engine.protocol import (
    Cancel, CloseChat, Command, Embed, Embedded, EngineError, EngineOptions, Event, LoadModel, ModelInfo,
    ModelLoading, Shutdown, Submit, TurnQueued, UnloadModel,
)
from engine.remote.engine import RemoteEngine
from engine.runners.base import RunnerError
from engine.scheduler import Scheduler
from engine.tuning import PROMPT_TOKENS_BESIDE_OTHER_MODELS

log = logging.getLogger(__name__)
Emit = Callable[[Event], None]
LONGEST_IDLE_WAIT_S = 60.0  # an idle loop looks at the keep-alives at least this often


class _Wake:
    """Look at the keep-alives now (check_keep_alive): tests move a fake clock."""


Inbox = Union[Command, LoadProgress, LoadDone, _Wake]


class EngineLoop:
    def __init__(self, emit: Emit, stats_interval_s: float = 0.5, clock: Clock = time.monotonic,
                 loader: Loader | None = None) -> None:
        self._emit = emit
        self._stats_interval_s = stats_interval_s
        self._inbox: queue.Queue[Inbox] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.pool = ModelPool(clock)
        self._stats = StatsKeeper(stats_interval_s)
        self._keeper = ModelKeeper(self.pool, loader or BackendLoader(), emit, self._inbox.put, self._stats,
                                   self._apply, lambda: self._emit_stats(time.perf_counter()))
        self._last_stats = 0.0
        self._was_busy = False
        self.steps = 0  # engine steps with work so far: "within one step" is checked against it

    @property
    def model_info(self) -> ModelInfo | None:
        """The model loaded last: the one a Submit without a model goes to."""
        last = self.pool.last()
        return last.info if last is not None else None

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
        """Cancel every load under way (each ends with ModelLoadFailed)."""
        self._keeper.cancel_loads()

    def check_keep_alive(self) -> None:
        """Look at the keep-alives now rather than when the loop would next wake (a test's fake clock moved)."""
        self._inbox.put(_Wake())

    def shutdown(self, timeout: float = 10.0) -> None:
        self.cancel_load()
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
                # a turn that starts and ends within this one step still ends with a stats report
                self._was_busy = self._was_busy or self.pool.has_work()
                self._step()
                self._keeper.unload_expired()
                self._maybe_emit_stats()
        except Exception as error:  # the window offers a restart
            log.exception("engine thread failed")
            self._emit(EngineError(f"The engine stopped: {error}\n{traceback.format_exc(limit=3)}"))
        finally:
            self._keeper.close_all()

    def _handle_commands(self) -> bool:
        """Apply every queued command; block only when idle. False on Shutdown."""
        try:
            if self.pool.has_work():
                command = self._inbox.get_nowait()
            else:
                wait = self.pool.seconds_to_next_expiry()
                command = self._inbox.get(timeout=None if wait is None else min(wait, LONGEST_IDLE_WAIT_S))
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

    def _apply(self, command: Inbox) -> None:
        if isinstance(command, LoadProgress):
            self._emit(ModelLoading(command.path, command.fraction, command.message))
        elif isinstance(command, LoadDone):
            self._keeper.loaded(command)
        elif isinstance(command, LoadModel):
            self._keeper.load(command)
        elif isinstance(command, UnloadModel):
            self._keeper.unload_asked(command.path)
        elif isinstance(command, EngineOptions):
            self.pool.options = command
        elif isinstance(command, Submit):
            self._submit(command)
        elif isinstance(command, Embed):
            self._embed(command)
        elif isinstance(command, (Cancel, CloseChat)):
            self._keeper.drop_held(command.chat_id)
            for model in list(self.pool.models):
                work = model.work
                self._emit_all(work.cancel(command.chat_id) if isinstance(command, Cancel) else work.close(command.chat_id))
        elif not isinstance(command, _Wake):  # send() refuses these; only a put around it gets here: the engine's bug
            raise TypeError(f"the engine cannot apply {command!r}")

    # ------------------------------------------------------------ turns

    def _submit(self, command: Submit) -> None:
        model = self._keeper.model_for(command)
        if model is None:
            return
        for other in self.pool.models:  # a tab that changed its model: its turn on the other one ends
            if other is not model:
                self._emit_all(other.work.cancel(command.chat_id))
        if command.keep_alive_s is not None:
            model.keep_alive_s = command.keep_alive_s
        self.pool.touch(model)
        work = model.work
        if command.prompt is None and any(m.images for m in command.messages) and not can_see(model.info):
            self._keeper.refuse(command.chat_id, cannot_see(model.info))
            return
        if isinstance(work, RemoteEngine):
            self._emit_all(work.submit(command))
            return
        runner = work.runner
        try:
            if command.prompt is not None:
                text, setup = command.prompt, plain_turn(runner.output_format)
            else:
                text, setup = prepare_turn(runner.render_chat, runner.output_format, command)
            prompt = runner.tokenize(text)
        except Exception as error:  # a template from a model file can fail in many ways
            self._keeper.refuse(command.chat_id, f"Could not format this conversation for the model: {error}")
            return
        self._emit_all(work.submit(command.chat_id, prompt, command.sampling, setup))
        if any(sequence.chat_id == command.chat_id for sequence in work.waiting):
            self._emit(TurnQueued(command.chat_id, len(prompt)))

    def _embed(self, command: Embed) -> None:
        """Vectors from the named model, between two steps (they are short: one forward pass per text)."""
        model = self._keeper.model_for(command)
        if model is None:
            return
        self.pool.touch(model)
        embed = getattr(model.runner, "embed", None)
        if embed is None:
            self._emit(Embedded(command.chat_id, message="The model's backend does not make embeddings."))
            return
        try:
            vectors, counts = embed(command.texts)
        except RunnerError as error:
            self._emit(Embedded(command.chat_id, message=str(error)))
            return
        self._emit(Embedded(command.chat_id, tuple(map(tuple, vectors)), tuple(counts)))

    # ------------------------------------------------------------ steps

    def _step(self) -> None:
        model = self.pool.next_to_step()
        if model is None:
            return
        self.steps += 1
        model.served = True
        self.pool.touch(model)
        work = model.work
        others = [m.work for m in self.pool.models if m is not model]
        if isinstance(work, Scheduler):
            # a remote model's stream arrives between our steps only: it counts as decoding while it has work
            streaming = any(other.decoding() if isinstance(other, Scheduler) else other.has_work() for other in others)
            work.prompt_tokens_cap = PROMPT_TOKENS_BESIDE_OTHER_MODELS if streaming else None
        if isinstance(work, RemoteEngine) and any(m.busy for m in self.pool.models if m is not model):
            self._emit_all(work.step(wait_s=0))  # the others' steps are the wait
        else:
            self._emit_all(work.step())

    def _emit_all(self, events: list[Event]) -> None:
        for event in events:
            self._emit(event)

    # ------------------------------------------------------------ stats

    def _maybe_emit_stats(self) -> None:
        if not self.pool.models:
            return
        now = time.perf_counter()
        busy = self.pool.has_work()
        if busy and now - self._last_stats >= self._stats_interval_s or (self._was_busy and not busy):
            self._emit_stats(now)
        self._was_busy = busy

    def _emit_stats(self, now: float) -> None:
        self._last_stats = now
        self._emit(self._stats.stats(self.pool, now))
