"""/v1/models and which model answers a request: loaded ones, library ones loaded on demand, aliases, keep_alive.

A request's `model` is followed through the aliases to a loaded model, or to a library model that is
loaded first (when the server loads by name: on 127.0.0.1 by default); a name that is neither is a 404
whose message lists the ids (or, with unknown_model_is_default, the model loaded last answers). No
`model` means the model loaded last. `keep_alive` (Ollama's: seconds or a duration such as "5m"; 0
unloads the model once this request is answered, -1 keeps it) or `ttl` (LM Studio's, seconds) set how
long the model stays loaded once idle.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from engine.protocol import ModelInfo
from engine.server.errors import ApiError
from engine.server.library import LibraryModel, library, listed_ids, model_id, resolve
from engine.server.options import ServerOptions
from engine.server.responses import ListedModel, model_list
from engine.server.turns import RETRY_AFTER_S, TurnDesk

DURATION = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def keep_alive_of(raw: Any) -> float | None:
    """The request's keep_alive (or ttl) in seconds; None when it has neither. ApiError 400 when unreadable."""
    if not isinstance(raw, dict):
        return None
    for key in ("keep_alive", "ttl"):
        value = raw.get(key)
        if value is None:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            seconds = float(value)
        elif isinstance(value, str) and (match := DURATION.match(value)):
            seconds = float(match[1]) * UNIT_SECONDS[match[2]]
        else:
            raise ApiError(400, f"{key} must be seconds (a number, or a duration such as \"5m\"): 0 unloads the "
                           f"model after this request, -1 keeps it loaded; not {value!r}.", param=key)
        return -1.0 if seconds < 0 else seconds
    return None


class ModelRoutes:
    def __init__(self, desk: TurnDesk, options: ServerOptions, created: int) -> None:
        self.desk, self.options, self.created = desk, options, created

    def loaded(self) -> list[ModelInfo]:
        """The loaded models, the one loaded last first."""
        return list(reversed(list(self.desk.host.models.values())))

    async def library(self) -> list[LibraryModel]:
        return await asyncio.to_thread(library, self.options)  # reads folders: not on the server's loop

    # ------------------------------------------------------------ which model answers

    def last(self) -> ModelInfo:
        info = self.desk.host.model_info
        if info is None:
            loading = self.desk.host.loading
            raise ApiError(503, "The model is still loading." if loading else "No model is loaded.",
                           code="model_loading" if loading else "model_not_loaded", retry_after_s=RETRY_AFTER_S)
        return info

    async def model(self, requested: str | None, keep_alive_s: float | None, any_name: bool = False) -> ModelInfo:
        """The model that answers a request naming `requested`, loaded first if it must be.

        `any_name`: a name that matches nothing gets the model loaded last (Anthropic's clients name Claude)."""
        if not requested:
            return self.last()
        found = resolve(requested, self.loaded(), [], self.options)
        if found.loaded is not None:
            return found.loaded
        entries = await self.library()
        found = resolve(requested, self.loaded(), entries, self.options)
        if found.loaded is not None:
            return found.loaded
        if found.to_load is not None:
            if not self.options.loads_by_name:
                raise ApiError(404, f"The model {requested!r} is not loaded, and this server loads models by name "
                               f"only when asked: POST /v1/models/{found.to_load.id}/load first.",
                               param="model", code="model_not_loaded")
            return await self.load_entry(found.to_load, keep_alive_s)
        if any_name or self.options.unknown_model_is_default:
            return self.last()
        raise self.not_found(requested, entries)

    def not_found(self, requested: str, entries: list[LibraryModel]) -> ApiError:
        ids = listed_ids(self.loaded(), entries)
        has = ", ".join(repr(i) for i in ids) if ids else "no models"
        return ApiError(404, f"The model {requested!r} does not exist here: this server has {has}.",
                        param="model", code="model_not_found")

    async def load_entry(self, entry: LibraryModel, keep_alive_s: float | None) -> ModelInfo:
        config = replace(self.options.load_defaults, path=entry.path, backend=entry.backend)
        return await self.desk.load_model(config, keep_alive_s)

    # ------------------------------------------------------------ routes

    async def models(self, request: Request) -> Response:
        loaded = self.loaded()
        rows: list[ListedModel] = [(model_id(info), info.capabilities, True) for info in loaded]
        ids = {row[0] for row in rows}
        for entry in await self.library():
            if entry.id not in ids:
                ids.add(entry.id)
                rows.append((entry.id, self.desk.loads.capabilities.get(entry.path, ()), False))
        return JSONResponse(model_list(rows, self.created))

    async def load(self, request: Request) -> Response:
        """POST /v1/models/{id}/load: answers once the model is loaded (loading streams nothing)."""
        name = request.path_params["model_id"]
        keep_alive_s = keep_alive_of(await _optional_json(request))
        found = resolve(name, self.loaded(), await self.library(), self.options)
        if found.loaded is not None:
            info = found.loaded
        elif found.to_load is not None:
            info = await self.load_entry(found.to_load, keep_alive_s)
        else:
            raise self.not_found(name, await self.library())
        return JSONResponse({"id": model_id(info), "object": "model", "loaded": True})

    async def unload(self, request: Request) -> Response:
        """POST /v1/models/{id}/unload: answers once the model is out of memory (its answers end first)."""
        name = request.path_params["model_id"]
        entries = await self.library()
        found = resolve(name, self.loaded(), entries, self.options)
        if found.loaded is not None:
            await self.desk.unload_model(found.loaded.path)
            return JSONResponse({"id": model_id(found.loaded), "object": "model", "loaded": False})
        if found.to_load is not None:
            return JSONResponse({"id": found.to_load.id, "object": "model", "loaded": False})
        raise self.not_found(name, entries)


async def _optional_json(request: Request) -> Any:
    body = await request.body()
    if not body.strip():
        return None
    try:
        return json.loads(body)
    except ValueError as error:
        raise ApiError(400, f"The body is not valid JSON: {error}.") from None
