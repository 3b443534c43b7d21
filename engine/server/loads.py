"""Loads and unloads the API asks for (a request naming a library model, /v1/models/{id}/load), awaited on
the server's loop until the engine says the model is in (ModelLoaded) or why not (ModelLoadFailed).

Two requests naming the same model while it loads wait for the one load.
"""

from __future__ import annotations

import asyncio
from typing import Callable

from engine.protocol import (
    Command, EngineError, Event, LoadModel, ModelConfig, ModelInfo, ModelLoaded, ModelLoadFailed, ModelUnloaded,
    UnloadModel,
)
from engine.server.errors import ApiError

Send = Callable[[Command], None]


class ModelLoads:
    def __init__(self) -> None:
        self._loads: dict[str, list[asyncio.Future[Event]]] = {}
        self._unloads: dict[str, list[asyncio.Future[Event]]] = {}
        self.capabilities: dict[str, tuple[str, ...]] = {}  # path -> what it could do when it was last loaded

    async def load(self, send: Send, config: ModelConfig, keep_alive_s: float | None) -> ModelInfo:
        """The model loaded (ApiError 503 with the engine's words when it cannot be)."""
        first = config.path not in self._loads
        future: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        self._loads.setdefault(config.path, []).append(future)
        if first:
            send(LoadModel(config, keep_alive_s))
        event = await future
        if isinstance(event, ModelLoaded):
            return event.info
        message = event.message if isinstance(event, (ModelLoadFailed, EngineError)) else "The engine stopped."
        raise ApiError(503, message.splitlines()[0] if message else "The model could not be loaded.",
                       param="model", code="model_load_failed")

    async def unload(self, send: Send, path: str) -> ModelUnloaded:
        future: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        self._unloads.setdefault(path, []).append(future)
        send(UnloadModel(path))
        event = await future
        if not isinstance(event, ModelUnloaded):
            raise ApiError(500, "The engine stopped before it unloaded the model.")
        return event

    def on_event(self, event: Event) -> None:
        """On the server's loop: an engine event that may answer a load or an unload."""
        if isinstance(event, ModelLoaded):
            self.capabilities[event.info.path] = event.info.capabilities
            self._answer(self._loads, event.info.path, event)
        elif isinstance(event, ModelLoadFailed):
            self._answer(self._loads, event.path, event)
        elif isinstance(event, ModelUnloaded):
            self._answer(self._unloads, event.path, event)
        elif isinstance(event, EngineError):
            for waiting in (self._loads, self._unloads):
                for path in list(waiting):
                    self._answer(waiting, path, event)

    @staticmethod
    def _answer(waiting: dict[str, list[asyncio.Future[Event]]], path: str, event: Event) -> None:
        for future in waiting.pop(path, []):
            if not future.done():
                future.set_result(event)
