"""Loading and unloading on the engine thread: the budget's room, the load jobs, the keep-alives, and the
turns that wait for a model being loaded (applied once it is in, refused with the reason if it fails).

The loop (engine/loop.py) hands it LoadModel, UnloadModel and the jobs' LoadDone; the bookkeeping of
what is loaded is the pool's (engine/models.py), the loading itself a LoadJob's (engine/loading.py).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable, Literal

from engine.catalog.model_files import known_name
from engine.engine_stats import StatsKeeper
from engine.loading import LoadDone, Loader, LoadJob, Report
from engine.models import LoadedModel, ModelPool
from engine.paths import user_path
from engine.protocol import (
    ChatError, Embed, Embedded, Event, LoadModel, ModelLoaded, ModelLoadFailed, ModelUnloaded, Submit, TurnFinished,
    TurnStats,
)
from engine.remote.engine import RemoteEngine
from engine.remote.errors import base_url
from engine.scheduler import Scheduler
from engine.units import format_bytes

Emit = Callable[[Event], None]
UnloadReason = Literal["idle", "room", "request", "replaced"]
NO_MODEL = "No model is loaded yet. Wait for loading to finish or pick a model in Settings."


class ModelKeeper:
    def __init__(self, pool: ModelPool, loader: Loader, emit: Emit, report: Report, stats: StatsKeeper,
                 apply_held: Callable[[Submit | Embed], None], on_loaded: Callable[[], None]) -> None:
        self.pool, self._loader, self._emit, self._report, self._stats = pool, loader, emit, report, stats
        self._apply_held, self._on_loaded = apply_held, on_loaded
        self._jobs: dict[str, LoadJob] = {}  # path -> its load under way
        self._held: dict[str, list[Submit | Embed]] = {}  # path -> commands for it that wait for its load

    def cancel_loads(self) -> None:
        """Any thread: every load under way ends (with ModelLoadFailed "cancelled")."""
        for job in list(self._jobs.values()):
            job.cancel.set()

    def _emit_all(self, events: list[Event]) -> None:
        for event in events:
            self._emit(event)

    def model_for(self, command: Submit | Embed) -> LoadedModel | None:
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
            self.refuse(command.chat_id, message)
        return None

    def refuse(self, chat_id: str, message: str) -> None:
        """The turn ends before it began, with why."""
        self._emit(ChatError(chat_id, message))
        self._emit(TurnFinished(chat_id, "error", TurnStats(0, 0, 0, 0.0, 0.0, 0.0), "", message))

    def drop_held(self, chat_id: str) -> None:
        for path, held in self._held.items():
            for command in [c for c in held if c.chat_id == chat_id]:
                held.remove(command)
                if isinstance(command, Submit):
                    self._emit(TurnFinished(chat_id, "cancelled", TurnStats(0, 0, 0, 0.0, 0.0, 0.0)))

    def _release_held(self, path: str, failure: str = "") -> None:
        """The commands that waited for `path`: applied now that it is loaded, or refused with why it is not."""
        for command in self._held.pop(path, []):
            if not failure:
                self._apply_held(command)
            elif isinstance(command, Embed):
                self._emit(Embedded(command.chat_id, message=failure))
            else:
                self.refuse(command.chat_id, failure)

    def load(self, command: LoadModel) -> None:
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
            self.unload(model, "room", f"Unloaded {model.name} to make room for {name} "
                         f"({format_bytes(model.need_bytes)} freed).")
        job = LoadJob(config, command.keep_alive_s, need, self._loader.after_load_bytes(config))
        self._jobs[path] = job
        self.pool.loading[path] = need
        job.start(self._loader, self._report)

    def loaded(self, done: LoadDone) -> None:
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
            info = replace(result.info, path=job.path, estimated_after_load_bytes=job.after_load_bytes,
                           estimated_full_bytes=job.need_bytes)
            model = LoadedModel(job.path, info, Scheduler(result), job.need_bytes, keep_alive, self.pool.clock(),
                                runner=result)
        old = self.pool.add(model)
        if old is not None:
            self._emit_all(old.work.cancel_all("The model was changed; send again to continue."))
            old.close()
            self._emit(ModelUnloaded(old.path, "replaced", f"{old.name} was loaded again with other settings."))
        self._emit(ModelLoaded(model.info))
        self._on_loaded()
        self._release_held(job.path)

    def _job_named(self, name: str) -> LoadJob | None:
        return next((job for job in self._jobs.values()
                     if name in (job.path, known_name(job.path)) or name == job.path.rsplit("/", 1)[-1]), None)

    def unload_asked(self, name: str) -> None:
        model = self.pool.find(name) if name else None
        if model is not None:
            self.unload(model, "request", f"Unloaded {model.name}.")
            return
        job = self._job_named(name) if name else None
        if job is not None:
            job.cancel.set()  # its LoadDone says "cancelled"
        self._emit(ModelUnloaded(name, "request", f"{name!r} is not loaded."))

    def unload(self, model: LoadedModel, reason: UnloadReason, message: str) -> None:
        self._emit_all(model.work.cancel_all(f"{model.name} was unloaded; send again to load it."))
        self._stats.take_log(model, time.perf_counter())
        self.pool.remove(model)
        model.close()
        self._emit(ModelUnloaded(model.path, reason, message))

    def unload_expired(self) -> None:
        for model, reason in self.pool.expired():
            if reason == "idle":
                minutes = model.keep_alive_s / 60
                idle = f"{minutes:g} min" if minutes >= 1 else f"{model.keep_alive_s:g} s"
                message = f"Unloaded {model.name} (idle for {idle}) to free {format_bytes(model.need_bytes)}."
            else:
                message = f"Unloaded {model.name}: its last request asked for it to go when done (keep-alive 0)."
            self.unload(model, reason, message)

    def close_all(self) -> None:
        for job in list(self._jobs.values()):
            job.cancel.set()
            if job.thread is not None:
                job.thread.join(timeout=10)
        self._jobs.clear()
        for model in self.pool.models:
            model.close()
        self.pool.models.clear()
