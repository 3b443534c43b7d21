"""The two ways an answer goes out, both ending the engine's turn the moment the client leaves.

TurnStream: server-sent events (sse-starlette), chunk by chunk, `data: [DONE]`
last. sse-starlette listens for the client's disconnect and cancels the stream;
the `finally` around it closes the turn, which sends Cancel to the engine.
TurnResponse: one JSON answer; while it waits it listens for the disconnect
itself (Starlette would not notice until it writes).
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator

import anyio
from sse_starlette import EventSourceResponse
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from engine.protocol import TurnFinished
from engine.server.errors import ApiError, error_body
from engine.server.responses import Reply
from engine.server.turns import RETRY_AFTER_S, Turn, TurnDesk

PING_S = 15


def _data(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _failure(finished: TurnFinished) -> ApiError | None:
    """A turn the engine could not finish as an answer: the error to report instead."""
    if finished.reason == "error":
        return ApiError(500, finished.message or "The engine failed on this request.")
    if finished.reason == "interrupted":  # the remote backend's own server broke off mid-answer
        return ApiError(502, finished.message or "The upstream server broke off this answer.")
    if finished.reason in ("cancelled", "closed"):
        return ApiError(503, finished.message or "The answer was stopped before its end.", code="cancelled",
                        retry_after_s=RETRY_AFTER_S)
    return None


class TurnStream(EventSourceResponse):
    def __init__(self, turn: Turn, desk: TurnDesk, reply: Reply, include_usage: bool) -> None:
        super().__init__(self._events(turn, reply, include_usage), ping=PING_S, sep="\n")
        self._turn, self._desk = turn, desk

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:  # done, failed, or the client went away: the turn ends here either way
            self._desk.close(self._turn)

    @staticmethod
    async def _events(turn: Turn, reply: Reply, include_usage: bool) -> AsyncIterator[str]:
        yield _data(reply.first_chunk())
        try:
            async for piece in turn.pieces():
                if piece:
                    yield _data(reply.text_chunk(piece))
        except ApiError as error:
            yield _data(error.body())
            yield "[DONE]"
            return
        finished = turn.finished
        assert finished is not None
        if finished.reason == "error":
            yield _data(error_body(500, finished.message or "The engine failed on this request."))
        else:  # a cancelled stream still ends with a finish reason, and a note saying why
            yield _data(reply.last_chunk(finished))
            if include_usage:
                yield _data(reply.usage_chunk(finished))
        yield "[DONE]"


class TurnResponse(Response):
    def __init__(self, turn: Turn, desk: TurnDesk, reply: Reply) -> None:
        super().__init__(status_code=200)
        self._turn, self._desk, self._reply = turn, desk, reply

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            finished = await self._answer_unless_gone(receive)
        except ApiError as error:
            response: Response = error.response()
        else:
            if finished is None:
                return  # nobody to answer
            failure = _failure(finished)
            response = failure.response() if failure else JSONResponse(self._reply.complete(finished))
        finally:
            self._desk.close(self._turn)
        await response(scope, receive, send)

    async def _answer_unless_gone(self, receive: Receive) -> TurnFinished | None:
        result: list[TurnFinished] = []
        errors: list[ApiError] = []
        async with anyio.create_task_group() as group:

            async def answer() -> None:
                try:
                    result.append(await self._turn.answer())
                except ApiError as error:  # raised out of a task group it would come wrapped
                    errors.append(error)
                group.cancel_scope.cancel()

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                group.cancel_scope.cancel()

            group.start_soon(answer)
            group.start_soon(watch)
        if errors:
            raise errors[0]
        return result[0] if result else None
