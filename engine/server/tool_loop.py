"""A request whose model may call the server's own tools: rounds of answer, run the calls, answer again.

It stands where a Turn stands (TurnStream and TurnResponse cannot tell them apart). Each round is one
engine turn with its own chat id; the next round's prompt is the last one plus the model's calls and
their results, so the slot's cache serves all but the new tokens. A round whose calls all name the
server's tools is not shown to the client as calls: the server runs them (on threads, one after the
other, each under the tools' own limits) and the client sees each as a `ServerToolRan` step, then the
next round. A round that calls any of the client's own functions ends the request as always, every
call in it returned. The results go to the model as tool messages framed as untrusted data, as the
window gives them. Limits: rounds, pages fetched and time per request (ServerTools).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

from engine.protocol import (
    ChatMessage,
    Event,
    TokenLogprob,
    ToolCall,
    ToolCallArguments,
    ToolCallStarted,
    TurnFinished,
)
from engine.server.turns import Turn, TurnDesk, new_chat_id
from engine.server.web_tools import ServerToolRan, ServerTools
from engine.tools.builtin.base import run_safely
from engine.tools.builtin.fetch_page import NAME as FETCH_PAGE
from engine.tools.results import DEFAULT_RESULT_LIMIT, ToolResult, cut, error_result


class ToolLoopTurn:
    """The rounds of one request, read as one turn."""

    def __init__(self, first: Turn, desk: TurnDesk, tools: ServerTools,
                 on_step: Callable[[ServerToolRan], None] = lambda step: None) -> None:
        self.chat_id = first.chat_id
        self.prompt_tokens, self.cached_tokens = first.prompt_tokens, first.cached_tokens
        self.finished: TurnFinished | None = None
        self.logprobs: list[TokenLogprob] = []
        self.steps: list[ServerToolRan] = []
        self._current, self._desk, self._tools = first, desk, tools
        self._submit = first.submit
        self._own = set(tools.names())
        self._texts: list[TurnFinished] = []  # every round's end, for the answer's text and its usage
        self._pages = 0
        self._deadline = time.monotonic() + tools.time_s
        self._cancelled = False
        self._on_step = on_step

    async def started(self) -> None:
        await self._current.started()
        self.cached_tokens = self._current.cached_tokens

    async def events(self) -> AsyncIterator[Event | ServerToolRan]:
        while True:
            calls: list[Event] = []  # held until the round's end says whose calls they are
            async for event in self._current.events():
                if isinstance(event, (ToolCallStarted, ToolCallArguments)):
                    calls.append(event)
                    continue
                yield event
            self.logprobs = [*self.logprobs, *self._current.logprobs]
            finished = self._current.finished
            assert finished is not None
            self._texts.append(finished)
            if not self._runs_here(finished):
                for event in calls:
                    yield event
                self.finished = self._merged(finished)
                return
            for call in finished.tool_calls:
                step = ServerToolRan(self.chat_id, len(self._texts), call, await self._run(call))
                self.steps.append(step)
                self._on_step(step)
                yield step
            if self._cancelled:
                self.finished = self._merged(replace(finished, reason="cancelled"))
                return
            await self._next_round(finished)

    async def answer(self) -> TurnFinished:
        async for _ in self.events():
            pass
        assert self.finished is not None
        return self.finished

    def cancel(self, note: str = "") -> None:
        self._cancelled = True
        self._current.cancel(note)
        self._desk.close(self._current)

    # ------------------------------------------------------------ rounds

    def _runs_here(self, finished: TurnFinished) -> bool:
        return (finished.reason == "tool_calls" and bool(finished.tool_calls) and not self._cancelled
                and all(call.name in self._own for call in finished.tool_calls))

    async def _run(self, call: ToolCall) -> ToolResult:
        tool = next(tool for tool in self._tools.tools if tool.name == call.name)
        if call.name == FETCH_PAGE:
            if self._pages >= self._tools.pages:
                return error_result(f"fetch_page was not run: this request may fetch {self._tools.pages} pages "
                                    "and has. Answer with what you have read.")
            self._pages += 1
        return await asyncio.to_thread(lambda: cut(run_safely(tool, call.arguments), DEFAULT_RESULT_LIMIT))

    async def _next_round(self, finished: TurnFinished) -> None:
        results = tuple(ChatMessage("tool", step.result.text, tool_call_id=step.call.id, name=step.call.name)
                        for step in self.steps[-len(finished.tool_calls):])
        said = ChatMessage("assistant", finished.text, reasoning=finished.reasoning, tool_calls=finished.tool_calls)
        last = len(self._texts) >= self._tools.rounds or time.monotonic() >= self._deadline
        # A named or required choice asked for the first call; after it the model decides, and past the limits
        # it answers with no tools offered.
        self._submit = replace(self._submit, chat_id=new_chat_id(), messages=(*self._submit.messages, said, *results),
                               tool_choice="none" if last else "auto")
        self._desk.close(self._current)
        self._current = await self._desk.open(self._submit)
        if self._cancelled:  # the client left while the round was being opened
            self._current.cancel()
        await self._current.started()

    def _merged(self, last: TurnFinished) -> TurnFinished:
        """The request's end as the client sees it: every round's text, the usage of all rounds together."""
        stats = [finished.stats for finished in self._texts]
        total = replace(last.stats, prompt_tokens=sum(s.prompt_tokens for s in stats),
                        reused_tokens=sum(s.reused_tokens for s in stats),
                        generated_tokens=sum(s.generated_tokens for s in stats),
                        reasoning_tokens=sum(s.reasoning_tokens for s in stats),
                        total_s=sum(s.total_s for s in stats))
        return replace(last, chat_id=self.chat_id, stats=total, text="".join(f.text for f in self._texts),
                       reasoning="".join(f.reasoning for f in self._texts))

