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
from dataclasses import replace
from typing import Callable, Literal, Union, get_args

from engine.catalog.model_files import known_name
from engine.engine_stats import StatsKeeper
from engine.images import can_see, cannot_see
from engine.loading import BackendLoader, LoadDone, Loader, LoadJob, LoadProgress
from engine.models import Clock, LoadedModel, ModelPool
from engine.parsing.prompt import plain_turn, prepare_turn
from engine.paths import user_path
from engine.protocol import (
    Cancel, ChatError, CloseChat, Command, Embed, Embedded, EngineError, EngineOptions, Event, LoadModel, ModelInfo,
    ModelLoaded, ModelLoadFailed, ModelLoading, ModelUnloaded, Shutdown, Submit, TurnFinished, TurnQueued, TurnStats,
    UnloadModel,
)
from engine.remote.engine import RemoteEngine
from engine.remote.errors import base_url
from engine.runners.base import RunnerError
from engine.scheduler import Scheduler
from engine.units import format_bytes

log = logging.getLogger(__name__)
Emit = Callable[[Event], None]
LONGEST_IDLE_WAIT_S = 60.0  # an idle loop looks at the keep-alives at least this often
UnloadReason = Literal["idle", "room", "request", "replaced"]
NO_MODEL = "No model is loaded yet. Wait for loading to finish or pick a model in Settings."


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
        self._loader = loader or BackendLoader()
        self.pool = ModelPool(clock)
        self._jobs: dict[str, LoadJob] = {}  # path -> its load under way
        self._held: dict[str, list[Submit | Embed]] = {}  # path -> commands for it that wait for its load
        self._stats = StatsKeeper(stats_interval_s)
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
        for job in list(self._jobs.values()):
            job.cancel.set()

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
                self._step()
                self._unload_expired()
                self._maybe_emit_stats()
        except Exception as error:  # the window offers a restart
            log.exception("engine thread failed")
            self._emit(EngineError(f"The engine stopped: {error}\n{traceback.format_exc(limit=3)}"))
        finally:
            self._close_all()

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
            self._loaded(command)
        elif isinstance(command, LoadModel):
            self._load(command)
        elif isinstance(command, UnloadModel):
            self._unload_asked(command.path)
        elif isinstance(command, EngineOptions):
            self.pool.options = command
        elif isinstance(command, Submit):
            self._submit(command)
        elif isinstance(command, Embed):
            self._embed(command)
        elif isinstance(command, (Cancel, CloseChat)):
            self._drop_held(command.chat_id)
            for model in list(self.pool.models):
                work = model.work
                self._emit_all(work.cancel(command.chat_id) if isinstance(command, Cancel) else work.close(command.chat_id))
        elif not isinstance(command, _Wake):  # send() refuses these; only a put around it gets here: the engine's bug
            raise TypeError(f"the engine cannot apply {command!r}")

    # ------------------------------------------------------------ turns

    def _submit(self, command: Submit) -> None:
        model = self._model_for(command)
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
            self._refuse(command.chat_id, cannot_see(model.info))
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
            self._refuse(command.chat_id, f"Could not format this conversation for the model: {error}")
            return
        self._emit_all(work.submit(command.chat_id, prompt, command.sampling, setup))
        if any(sequence.chat_id == command.chat_id for sequence in work.waiting):
            self._emit(TurnQueued(command.chat_id, len(prompt)))

    def _model_for(self, command: Submit | Embed) -> LoadedModel | None:
        """The loaded model the command names; None when it waits for its model's load or was refused."""
        model = self.pool.find(command.model)
        if model is not None:
            return model
        # nothing loaded yet: a turn sent after a LoadModel waits for it, as when loads were done in order
        latest = list(self._jobs.values())[-1] if self._jobs and not self.pool.models else None
        loading = self._job_named(command.model) if command.model else latest
        if loading is not None:
            self._held.setdefault(loading.path, []).append(command)
            return None
        if not command.model or not self.pool.models:
            message = NO_MODEL
        else:
            message = (f"The model {command.model!r} is not loaded; loaded: "
                       f"{', '.join(m.name for m in reversed(self.pool.models))}.")
        if isinstance(command, Embed):
            self._emit(Embedded(command.chat_id, message=message))
        else:
            self._refuse(command.chat_id, message)
        return None

    def _embed(self, command: Embed) -> None:
        """Vectors from the named model, between two steps (they are short: one forward pass per text)."""
        model = self._model_for(command)
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

    def _refuse(self, chat_id: str, message: str) -> None:
        self._emit(ChatError(chat_id, message))
        self._emit(TurnFinished(chat_id, "error", TurnStats(0, 0, 0, 0.0, 0.0, 0.0), "", message))

    def _drop_held(self, chat_id: str) -> None:
        for path, held in self._held.items():
            for command in [c for c in held if c.chat_id == chat_id]:
                held.remove(command)
                if isinstance(command, Submit):
                    self._emit(TurnFinished(chat_id, "cancelled", TurnStats(0, 0, 0, 0.0, 0.0, 0.0)))

    def _release_held(self, path: str, failure: str = "") -> None:
        """The commands that waited for `path`: applied now that it is loaded, or refused with why it is not."""
        for command in self._held.pop(path, []):
            if not failure:
                self._apply(command)
            elif isinstance(command, Embed):
                self._emit(Embedded(command.chat_id, message=failure))
            else:
                self._refuse(command.chat_id, failure)

    # ------------------------------------------------------------ loading and unloading

    def _load(self, command: LoadModel) -> None:
        config = command.config  # the path is the model's key from here on: the form its ModelLoaded gives
        config = replace(config, path=base_url(config.path) if config.backend == "remote" else user_path(config.path))
        path = config.path
        running = self._jobs.get(path)
        if running is not None and running.config == config:  # asked twice (two requests named it): one load
            running.keep_alive_s = command.keep_alive_s if command.keep_alive_s is not None else running.keep_alive_s
            return
        if running is not None:
            running.cancel.set()  # superseded: what it loads is closed when it reports
        need = self._loader.need_bytes(config)
        name = path if config.backend == "remote" else known_name(path)
        room = self.pool.room_for(path, name, need)
        if room.refusal:
            self._jobs.pop(path, None)
            self.pool.loading.pop(path, None)
            self._emit(ModelLoadFailed(path, room.refusal, previous_kept=bool(self.pool.models)))
            self._release_held(path, room.refusal)
            return
        for model in room.unload:
            self._unload(model, "room", f"Unloaded {model.name} to make room for {name} "
                         f"({format_bytes(model.need_bytes)} freed).")
        job = LoadJob(config, command.keep_alive_s, need)
        self._jobs[path] = job
        self.pool.loading[path] = need
        job.start(self._loader, self._inbox.put)

    def _loaded(self, done: LoadDone) -> None:
        job = done.job
        if self._jobs.get(job.path) is not job:  # superseded by a later load of the same path
            return
        del self._jobs[job.path]
        self.pool.loading.pop(job.path, None)
        if done.result is None:
            self._emit(ModelLoadFailed(job.path, done.message, previous_kept=bool(self.pool.models)))
            self._release_held(job.path, done.message)
            return
        result = done.result
        keep_alive = job.keep_alive_s if job.keep_alive_s is not None else self.pool.options.default_keep_alive_s
        if isinstance(result, RemoteEngine):
            model = LoadedModel(job.path, result.info, result, 0, keep_alive, self.pool.clock())
        else:
            info = result.info if result.info.path == job.path else replace(result.info, path=job.path)
            model = LoadedModel(job.path, info, Scheduler(result), job.need_bytes, keep_alive, self.pool.clock(),
                                runner=result)
        old = self.pool.add(model)
        if old is not None:
            self._emit_all(old.work.cancel_all("The model was changed; send again to continue."))
            old.close()
            self._emit(ModelUnloaded(old.path, "replaced", f"{old.name} was loaded again with other settings."))
        self._emit(ModelLoaded(model.info))
        self._emit_stats(time.perf_counter())
        self._release_held(job.path)

    def _job_named(self, name: str) -> LoadJob | None:
        return next((job for job in self._jobs.values()
                     if name in (job.path, known_name(job.path)) or name == job.path.rsplit("/", 1)[-1]), None)

    def _unload_asked(self, name: str) -> None:
        model = self.pool.find(name) if name else None
        if model is not None:
            self._unload(model, "request", f"Unloaded {model.name}.")
            return
        job = self._job_named(name) if name else None
        if job is not None:
            job.cancel.set()  # its LoadDone says "cancelled"
        self._emit(ModelUnloaded(name, "request", f"{name!r} is not loaded."))

    def _unload(self, model: LoadedModel, reason: UnloadReason, message: str) -> None:
        self._emit_all(model.work.cancel_all(f"{model.name} was unloaded; send again to load it."))
        self._stats.take_log(model, time.perf_counter())
        self.pool.remove(model)
        model.close()
        self._emit(ModelUnloaded(model.path, reason, message))

    def _unload_expired(self) -> None:
        for model, reason in self.pool.expired():
            if reason == "idle":
                minutes = model.keep_alive_s / 60
                idle = f"{minutes:g} min" if minutes >= 1 else f"{model.keep_alive_s:g} s"
                message = f"Unloaded {model.name} (idle for {idle}) to free {format_bytes(model.need_bytes)}."
            else:
                message = f"Unloaded {model.name}: its last request asked for it to go when done (keep-alive 0)."
            self._unload(model, reason, message)

    def _close_all(self) -> None:
        for job in list(self._jobs.values()):
            job.cancel.set()
            if job.thread is not None:
                job.thread.join(timeout=10)
        self._jobs.clear()
        for model in self.pool.models:
            model.close()
        self.pool.models.clear()

    # ------------------------------------------------------------ steps

    def _step(self) -> None:
        model = self.pool.next_to_step()
        if model is None:
            return
        self.steps += 1
        model.served = True
        self.pool.touch(model)
        work = model.work
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
