"""Request bodies read with a size limit: past it, a 413 the client gets to read (not a reset connection)."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from engine.server.errors import ApiError

DRAIN_LIMIT_BYTES = 64 * 2**20  # past this, a too-large body is not read to its end before the 413


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        await _drain(request, int(declared))
        raise too_large(limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            await _drain(request, DRAIN_LIMIT_BYTES)
            raise too_large(limit)
    return bytes(body)


async def _drain(request: Request, size: int) -> None:
    """Read a refused body to its end, so the client gets to read the 413 instead of a reset."""
    if size > DRAIN_LIMIT_BYTES:
        return
    async for _ in request.stream():
        pass


def too_large(limit: int) -> ApiError:
    return ApiError(413, f"The request body is larger than {limit / 2**20:g} MiB.", code="body_too_large")


async def read_json(request: Request, limit: int) -> Any:
    body = await read_body(request, limit)
    if not body:
        raise ApiError(400, "The request has no body: send a JSON object.")
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise ApiError(400, f"The body is not valid JSON: {error}.") from None
