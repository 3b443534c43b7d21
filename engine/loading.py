"""Loading a model off the engine thread, so the models already loaded keep stepping meanwhile.

A LoadJob runs the backend's load on a thread of its own and reports through the
engine's inbox (LoadProgress, then one LoadDone), so every event is still emitted
on the engine thread, in order. The Loader says what a model will cost before it
is loaded (the estimate the settings dialog shows, for this machine's memory) and
loads it; tests give a scripted one.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable, Protocol, Union

from engine.protocol import ModelConfig
from engine.remote.engine import RemoteEngine, RemoteUnavailable
from engine.runners.base import LoadCancelled, Progress, Runner, RunnerError

log = logging.getLogger(__name__)
Loaded = Union[Runner, RemoteEngine]


@dataclass(frozen=True)
class LoadProgress:
    path: str
    fraction: float
    message: str


@dataclass(frozen=True)
class LoadDone:
    """A load ended: `result` is the runner (or remote engine), or None and `message` says why."""

    job: LoadJob
    result: Loaded | None
    message: str = ""


Report = Callable[[Union[LoadProgress, LoadDone]], None]


class Loader(Protocol):
    def need_bytes(self, config: ModelConfig) -> int:
        """The memory the model will take with this config; 0 where it cannot be known (or is not ours)."""

    def after_load_bytes(self, config: ModelConfig) -> int:
        """Of that, what it holds right after load, before its chats fill; 0 where it cannot be known."""

    def load(self, config: ModelConfig, progress: Progress, cancelled: Callable[[], bool]) -> Loaded:
        """Raises RunnerError, LoadCancelled or RemoteUnavailable with a message for a person."""


class BackendLoader:
    """The real backends, sized with engine/catalog's estimate for this machine."""

    def need_bytes(self, config: ModelConfig) -> int:
        return self._estimate(config)[1]

    def after_load_bytes(self, config: ModelConfig) -> int:
        return self._estimate(config)[0]

    @staticmethod
    def _estimate(config: ModelConfig) -> tuple[int, int]:
        """(right after load, with every chat full) on the model's device; zeros where it cannot be known."""
        if config.backend == "remote":
            return 0, 0  # the server holds it
        try:
            from engine.catalog.here import estimate_here
            from engine.catalog.models import describe

            result = estimate_here(describe(config.path), config)
        except Exception as error:  # an unreadable file fails its load with the backend's own words
            log.info("no memory estimate for %s: %s", config.path, error)
            return 0, 0
        return result.device_after_load_bytes, result.device_bytes

    def load(self, config: ModelConfig, progress: Progress, cancelled: Callable[[], bool]) -> Loaded:
        if config.backend == "remote":
            progress(0.0, f"Connecting to {config.path}")
            return RemoteEngine.connect(config)
        from engine.runners import load_runner  # backends import heavy libraries

        progress(0.0, "Starting")
        return load_runner(config, progress, cancelled)


class LoadJob:
    """One model being loaded; `need_bytes` is held in the budget until it is done."""

    def __init__(self, config: ModelConfig, keep_alive_s: float | None, need_bytes: int,
                 after_load_bytes: int = 0) -> None:
        self.config, self.keep_alive_s, self.need_bytes = config, keep_alive_s, need_bytes
        self.after_load_bytes = after_load_bytes  # the estimate's figure before the chats fill, for the gauge
        self.cancel = threading.Event()
        self.thread: threading.Thread | None = None

    @property
    def path(self) -> str:
        return self.config.path

    def start(self, loader: Loader, report: Report) -> None:
        self.thread = threading.Thread(target=self._run, args=(loader, report), name="hearth-load", daemon=True)
        self.thread.start()

    def _run(self, loader: Loader, report: Report) -> None:
        def progress(fraction: float, message: str) -> None:
            report(LoadProgress(self.path, fraction, message))

        try:
            result = loader.load(self.config, progress, self.cancel.is_set)
        except LoadCancelled:
            report(LoadDone(self, None, "Loading was cancelled."))
        except (RunnerError, RemoteUnavailable) as error:
            report(LoadDone(self, None, str(error)))
        except Exception as error:
            log.exception("loading %s failed", self.path)
            report(LoadDone(self, None, f"Could not load {self.path}: {error}"))
        else:
            if self.cancel.is_set():  # cancelled as it finished (or the engine is stopping): nobody wants it
                if isinstance(result, RemoteEngine):
                    result.shutdown()
                else:
                    result.close()
                report(LoadDone(self, None, "Loading was cancelled."))
                return
            report(LoadDone(self, result))
