"""The loaded models: each its own runner and scheduler (or a remote engine), one memory budget, keep-alives.

Pure bookkeeping on the engine thread, with the clock given (tests pass a fake one):
which model a name means, which model steps next (round robin over those with work),
what must be unloaded to make room for a load (least recently used idle models that
are not pinned) or why it cannot fit, and which idle models have outstayed their
keep-alive. Loading and unloading themselves are the loop's (engine/loop.py).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal, Union

from engine.catalog.model_files import known_name
from engine.protocol import EngineOptions, ModelInfo
from engine.remote.engine import RemoteEngine
from engine.runners.base import Runner
from engine.scheduler import Scheduler
from engine.units import format_bytes

Clock = Callable[[], float]
Work = Union[Scheduler, RemoteEngine]


@dataclass
class LoadedModel:
    """One model in memory; `path` is its key (LoadModel's config.path)."""

    path: str
    info: ModelInfo
    work: Work
    need_bytes: int  # the estimate the budget counts for it (0: unknown, or held elsewhere: a remote server)
    keep_alive_s: float  # negative: pinned; 0: unloaded as soon as its turn ends
    last_used: float  # on the pool's clock: its last step or submit
    runner: Runner | None = None  # None for a remote engine
    served: bool = False  # it has stepped since it was loaded (keep-alive 0 waits for a turn to end)
    recent: deque[tuple[float, str]] = field(default_factory=deque)  # (time, chat): the speed window's tokens

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def pinned(self) -> bool:
        return self.keep_alive_s < 0

    @property
    def busy(self) -> bool:
        return self.work.has_work()

    def answers_to(self, name: str) -> bool:
        """A path, the name users know (file without .gguf, folder, "org/repo"), or the file's name."""
        return name in (self.path, self.info.path, self.info.name, Path(self.path).name, known_name(self.path))

    def close(self) -> None:
        if isinstance(self.work, RemoteEngine):
            self.work.shutdown()
        elif self.runner is not None:
            self.runner.close()


@dataclass(frozen=True)
class Room:
    """What a load needs: the models to unload first, or why it cannot be loaded (`refusal`)."""

    unload: tuple[LoadedModel, ...] = ()
    refusal: str = ""


class ModelPool:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.options = EngineOptions()
        self.models: list[LoadedModel] = []  # in load order: the last one answers Submit.model ""
        self.loading: dict[str, int] = {}  # path -> the bytes it is being loaded with (held in the budget)
        self._turn = 0  # round robin: the index after the model that stepped last

    # ------------------------------------------------------------ finding

    def find(self, name: str) -> LoadedModel | None:
        """The model `name` means; "" the one loaded last."""
        if not name:
            return self.models[-1] if self.models else None
        exact = next((model for model in self.models if model.path == name), None)
        return exact or next((model for model in reversed(self.models) if model.answers_to(name)), None)

    def last(self) -> LoadedModel | None:
        return self.models[-1] if self.models else None

    # ------------------------------------------------------------ changes

    def add(self, model: LoadedModel) -> LoadedModel | None:
        """Put a freshly loaded model in; returns the one it replaces (same path), for the caller to close."""
        old = next((m for m in self.models if m.path == model.path), None)
        if old is not None:
            self.models.remove(old)
        self.models.append(model)
        self.loading.pop(model.path, None)
        return old

    def remove(self, model: LoadedModel) -> None:
        if model in self.models:
            self.models.remove(model)

    def touch(self, model: LoadedModel) -> None:
        model.last_used = self.clock()

    # ------------------------------------------------------------ stepping

    def next_to_step(self) -> LoadedModel | None:
        """Round robin over the models with work: each steps once before any steps again."""
        count = len(self.models)
        for offset in range(count):
            index = (self._turn + offset) % count
            if self.models[index].busy:
                self._turn = index + 1
                return self.models[index]
        return None

    def has_work(self) -> bool:
        return any(model.busy for model in self.models)

    # ------------------------------------------------------------ room

    def room_for(self, path: str, name: str, need_bytes: int) -> Room:
        """Which idle models must go for `path` to be loaded with `need_bytes`, least recently used first."""
        others = [m for m in self.models if m.path != path]
        loading = {p: b for p, b in self.loading.items() if p != path}
        spare = sorted((m for m in others if not m.busy and not m.pinned), key=lambda m: m.last_used)
        unload: list[LoadedModel] = []
        budget, cap = self.options.budget_bytes, self.options.max_loaded
        if cap > 0:
            while len(others) - len(unload) + len(loading) + 1 > cap:
                if not spare:
                    return Room(refusal=self._cap_refusal(name, others, cap))
                unload.append(spare.pop(0))
        if budget > 0 and need_bytes > 0:
            def used() -> int:
                return sum(m.need_bytes for m in others if m not in unload) + sum(loading.values())

            while used() + need_bytes > budget and spare:
                unload.append(spare.pop(0))
            if used() + need_bytes > budget:
                return Room(refusal=self._budget_refusal(name, need_bytes, budget - used(), others))
        return Room(tuple(unload))

    def _budget_refusal(self, name: str, need: int, free: int, others: list[LoadedModel]) -> str:
        kept = self._kept(others)
        why = f" ({kept})" if kept else ""
        return (f"{name} needs {format_bytes(need)}, {format_bytes(max(free, 0))} free after unloading what is "
                f"idle, of a budget of {format_bytes(self.options.budget_bytes)}{why}. Unload a model, wait for "
                "its answers to end, or choose a smaller model or context.")

    def _cap_refusal(self, name: str, others: list[LoadedModel], cap: int) -> str:
        kept = self._kept(others)
        return (f"{name} cannot be loaded: {cap} model{'s are' if cap != 1 else ' is'} the most kept loaded, and "
                f"none can be unloaded now ({kept}). Unload one, or wait for its answers to end.")

    @staticmethod
    def _kept(others: list[LoadedModel]) -> str:
        parts = [f"{m.name} {'is answering' if m.busy else 'is pinned'}" for m in others if m.busy or m.pinned]
        return ", ".join(parts)

    # ------------------------------------------------------------ keep-alive

    def expired(self) -> list[tuple[LoadedModel, Literal["idle", "request"]]]:
        """Idle models due to go, with why: "request" (keep-alive 0, its turn has ended) or "idle" (outstayed)."""
        now = self.clock()
        due: list[tuple[LoadedModel, Literal["idle", "request"]]] = []
        for model in self.models:
            if model.busy or model.pinned:
                continue
            if model.keep_alive_s == 0:
                if model.served:
                    due.append((model, "request"))
            elif now - model.last_used >= model.keep_alive_s:
                due.append((model, "idle"))
        return due

    def seconds_to_next_expiry(self) -> float | None:
        """How long the loop may sleep before a keep-alive runs out (None: none will while nothing happens)."""
        now = self.clock()
        left = [m.last_used + m.keep_alive_s - now for m in self.models if not m.busy and m.keep_alive_s > 0]
        return max(0.0, min(left)) if left else None
