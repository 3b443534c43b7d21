"""The two ways an answer goes out, both ending the engine's turn the moment the client leaves.

Both take an Encoder: the API's own spelling of the answer (OpenAI's chunks,
Anthropic's content blocks, the Responses API's items), so one way of streaming
serves them all. TurnStream: server-sent events (sse-starlette), one or more per
engine event; sse-starlette listens for the client's disconnect and cancels the
stream; the `finally` around it closes the turn, which sends Cancel to the
engine. TurnResponse: one JSON answer; while it waits it listens for the
disconnect itself (Starlette would not notice until it writes).
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Protocol, Sequence, Union

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from engine.protocol import Event, Logprobs, TokenLogprob, ToolCallArguments, ToolCallStarted, TurnFinished
from engine.server.errors import ApiError
from engine.server.turns import RETRY_AFTER_S, AnswerTurn, TurnDesk

PING_S = 15
Sse = Union[str, ServerSentEvent]  # a bare string is one `data:` line


class Encoder(Protocol):
    """One API's answer: the stream's events, and the whole answer at once."""

    def opening(self, prompt_tokens: int, cached_tokens: int) -> Sequence[Sse]: ...

    def event(self, event: Event) -> Sequence[Sse]: ...

    def closing(self, finished: TurnFinished) -> Sequence[Sse]: ...

    def failure(self, error: ApiError) -> Sequence[Sse]: ...

    def complete(self, finished: TurnFinished, logprobs: list[TokenLogprob]) -> dict[str, Any]: ...

    def error_response(self, error: ApiError) -> Response: ...


def failure_of(finished: TurnFinished) -> ApiError | None:
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
    def __init__(self, turn: AnswerTurn, desk: TurnDesk, encoder: Encoder) -> None:
        super().__init__(self._events(turn, encoder), ping=PING_S, sep="\n")
        self._turn, self._desk = turn, desk

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:  # done, failed, or the client went away: the turn ends here either way
            self._desk.close(self._turn)

    @staticmethod
    async def _events(turn: AnswerTurn, encoder: Encoder) -> AsyncIterator[Sse]:
        await turn.started()  # the opening waits for a slot, so it can say how much of the prompt was cached
        for item in encoder.opening(turn.prompt_tokens, turn.cached_tokens):
            yield item
        held = CallHold()
        try:
            async for event in turn.events():
                for released in held.take(event):
                    for item in encoder.event(released):
                        yield item
        except ApiError as error:
            for item in encoder.failure(error):
                yield item
            return
        assert turn.finished is not None
        for released in held.finish(turn.finished):
            for item in encoder.event(released):
                yield item
        for item in encoder.closing(turn.finished):
            yield item


class CallHold:
    """A call's events wait until the call is whole (the next part began, or the turn ended with it among
    its calls), so a call cut by the token limit never streams: the stream joins to the answer that is
    not streamed, which leaves that call out."""

    def __init__(self) -> None:
        self._held: list[Event] = []

    def take(self, event: Event) -> list[Event]:
        if isinstance(event, ToolCallArguments) and self._held:
            self._held.append(event)
            return []
        if isinstance(event, Logprobs):  # a step's log-probabilities: they say nothing of the call's end
            return [event]
        released, self._held = self._held, []
        if isinstance(event, ToolCallStarted):
            self._held = [event]
            return released
        return [*released, event]

    def finish(self, finished: TurnFinished) -> list[Event]:
        held, self._held = self._held, []
        started = held[0] if held else None
        whole = isinstance(started, ToolCallStarted) and started.index < len(finished.tool_calls)
        return held if whole else []


class TurnResponse(Response):
    def __init__(self, turn: AnswerTurn, desk: TurnDesk, encoder: Encoder) -> None:
        super().__init__(status_code=200)
        self._turn, self._desk, self._encoder = turn, desk, encoder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            finished = await self._answer_unless_gone(receive)
        except ApiError as error:
            response: Response = self._encoder.error_response(error)
        else:
            if finished is None:
                return  # nobody to answer
            failure = failure_of(finished)
            response = (self._encoder.error_response(failure) if failure else
                        JSONResponse(self._encoder.complete(finished, self._turn.logprobs)))
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
