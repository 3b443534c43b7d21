"""One tab's tool calls: cards, approval, running, results, and whether the answer goes on.

When an answer ends in tool calls, each call gets a card inside that answer (app/chat/tool_card.py).
Nothing runs before the person allows it, unless the tool is always allowed; each allowed call runs
at once, so the independent calls of one step run together. When every call of the step has a
result (or was declined) the tab is handed the tool messages, in call order, and sends the
conversation on; after `tools.max_rounds` steps the model is offered no tools and must answer.
A result framed as untrusted (a fetched page, web search results: engine/tools/builtin) puts every
later call of the chat on its card, even of a tool always allowed: the page may have asked for it,
and the card names the pages read. The built-in memory tool's notes go into the system prompt
unless the chat turned memory off, which also takes the tool away from it. In research mode a planner
(app/chat/research.py) picks each round's tools instead of the settings; its calls take the same cards.
While calls wait or run the chat holds no engine work: the engine finished its turn. Nor does it
while the servers start before a turn (the first one needs their tools): Stop then drops the turn,
and nothing is sent when they come up. A stored chat's calls, restored and resent, are
app/chat/stored_tool_calls.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace

from PySide6.QtCore import QObject, Signal

from app.bridge import ChatMessage, EngineBridge, SamplingParams
from app.chat.message_list import MessageCard, MessageList
from app.chat.stored_tool_calls import INTERRUPTED, add_result_card
from app.chat.tool_card import ToolCallCard, ToolResultCard, call_labels
from app.misc.accessibility import announce
from app.tools.builtin import BUILTIN_SERVER, MEMORY
from app.tools.service import ToolService
from engine.protocol import ToolCall, ToolSpec
from engine.tools.builtin.base import is_mcp_source, untrusted_source
from engine.tools.research import INSTRUCTIONS
from engine.tools.research_plan import ResearchStep
from engine.tools.results import ToolResult as Result

DECLINED = "The user declined this call; it did not run."
STOPPED = "The user stopped this call before it finished."
NOT_OFFERED = "There is no tool named {name}; it did not run."
__all__ = ["DECLINED", "INTERRUPTED", "NOT_OFFERED", "STOPPED", "ChatTools", "held_by", "with_system_note"]
Planner = Callable[[Sequence[ChatMessage]], ResearchStep | None]  # research mode's next round (app/chat/research.py)


@dataclass
class _Call:
    """One call of the step under way (GUI thread only)."""

    call: ToolCall
    server: str
    card: ToolCallCard
    future: Future[Result] | None = None
    result: Result | None = None
    outcome: str = ""  # how it ended, stored with its tool message: allowed, always, declined, stopped


class ChatTools(QObject):
    """The tool side of one chat tab; the tab calls `begin` with an answer's calls and `stop` on Stop."""

    results_ready = Signal(list)  # [ChatMessage] tool messages of the step: the tab sends them on
    stopped = Signal(list)  # [ChatMessage] the step's messages after Stop: the answer ends here
    waiting_for_person = Signal(str)  # calls wait for the person's word: what to tell them (Answer aloud says it)

    def __init__(self, service: ToolService, view: MessageList, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.service, self.view = service, view
        self.rounds = 0  # steps of tool calls in the answer under way
        # What the first step of an answer asks of the model (Submit.tool_choice); later steps are "auto".
        self.tool_choice = "auto"
        self.outcomes: dict[str, str] = {}  # call id -> outcome (the history stores it)
        self.errors: dict[str, bool] = {}  # call id -> the result was an error
        self.servers: dict[str, str] = {}  # call id -> the server it goes to (stored with the answer)
        self.labels: dict[str, str] = {}  # call id -> which call of its tool it is, where one step has several
        self._calls: list[_Call] = []
        self._offered: dict[str, tuple[str, ToolSpec]] = {}
        self._failures_shown: set[str] = set()
        self._preparing: object | None = None  # the turn waiting for the servers to be listed
        self.chat_id = ""  # the chat of the turn under way (its memory switch)
        self.sources: list[str] = []  # the untrusted content the conversation holds, oldest first
        # Research mode: decides each round's tools instead of the settings; its built-in tools run for it even
        # where the settings leave them off (the switch asked for them; each call still has its card).
        self.planner: Planner | None = None
        self._planned: tuple[str, ...] = ()
        service.call_finished.connect(self._on_call_finished)

    @property
    def busy(self) -> bool:
        """Calls wait or run, or a turn waits for its servers: Stop is ours, the engine has no turn."""
        return bool(self._calls) or self._preparing is not None

    def new_answer(self) -> None:
        self.rounds = 0

    def submit_turn(self, bridge: EngineBridge, chat_id: str, conversation: list[ChatMessage],
                    sampling: SamplingParams, options: tuple[tuple[str, str], ...], show_error: Callable[[str], None]) -> None:
        """Submit the turn with the enabled tools, once their servers are started and listed (the first time)."""
        self._preparing = turn = object()
        self.chat_id = chat_id
        self.sources = [source for message in conversation if message.role == "tool"
                        for source in [held_by(message.content)] if source]
        notes = self.service.builtin.memory_prompt(chat_id)
        if notes:
            conversation = with_system_note(conversation, notes)

        def ready() -> None:
            if self._preparing is turn:  # not stopped (nor replaced by a later turn) while the servers started
                self._preparing = None
                self._submit(bridge, chat_id, conversation, sampling, options, show_error)

        self.service.prepare(ready)

    def _submit(self, bridge: EngineBridge, chat_id: str, conversation: list[ChatMessage],
                sampling: SamplingParams, options: tuple[tuple[str, str], ...], show_error: Callable[[str], None]) -> None:
        for failure in self.service.failures():  # a server that failed says why, once in each chat
            if failure not in self._failures_shown:
                self._failures_shown.add(failure)
                show_error(failure)
        step = self.planner(conversation) if self.planner is not None else None
        if step is not None:
            self._submit_step(bridge, chat_id, conversation, sampling, options, step)
            return
        self._planned = ()
        specs = self.specs()
        if specs:
            choice = self.tool_choice if self.rounds == 0 else "auto"
            bridge.submit(chat_id, conversation, sampling, template_options=options, tools=specs, tool_choice=choice)
        else:  # none enabled, or the step limit reached: the model must answer
            bridge.submit(chat_id, conversation, sampling, template_options=options)

    def _submit_step(self, bridge: EngineBridge, chat_id: str, conversation: list[ChatMessage],
                     sampling: SamplingParams, options: tuple[tuple[str, str], ...], step: ResearchStep) -> None:
        """A research round: its own tools and named choice, or the answer under its citation pattern."""
        self._offered = {spec.name: (BUILTIN_SERVER, spec) for spec in step.tools}
        self._planned = tuple(self._offered)
        conversation = with_system_note(conversation, f"{INSTRUCTIONS} {step.note}".strip())
        if step.constraint is not None:
            sampling = replace(sampling, constraint=step.constraint,
                               max_new_tokens=max(sampling.max_new_tokens, step.max_new_tokens))
        if step.tools:
            bridge.submit(chat_id, conversation, sampling, template_options=options, tools=step.tools,
                          tool_choice=step.tool_choice)
        else:
            bridge.submit(chat_id, conversation, sampling, template_options=options)

    def specs(self) -> tuple[ToolSpec, ...]:
        """What the next turn offers: every enabled tool, none once the step limit is reached."""
        self._offered = self.service.offered()
        if MEMORY in self._offered and self.chat_id and self.service.builtin.memory_off(self.chat_id):
            del self._offered[MEMORY]
        if self.rounds >= self.service.settings.get("tools.max_rounds"):
            return ()
        return tuple(spec for _, spec in self._offered.values())

    def begin(self, card: MessageCard, calls: Sequence[ToolCall]) -> None:
        """An answer ended in these calls: show them, run the always-allowed ones, wait for the rest."""
        self.rounds += 1
        self._calls = []
        card.browser.setVisible(bool(card.text().strip()))  # an answer that is only calls shows no empty text
        self.labels.update(call_labels(calls))
        for call in calls:
            server = self._offered.get(call.name, ("", None))[0]
            pending = _Call(call, server, ToolCallCard(call.name, server, call.arguments, self.labels.get(call.id, "")))
            self.servers[call.id] = server
            card.add_part(pending.card)
            pending.card.decided.connect(lambda choice, pending=pending: self._on_decided(pending, choice))
            self._calls.append(pending)
            pending.card.set_sources(self.sources)
            if not server:
                self._finish(pending, Result(NOT_OFFERED.format(name=call.name), is_error=True), "unknown", "unknown")
            elif self.service.always_allowed(server, call.name) and not self.sources:
                self._run(pending, "always")
            else:
                pending.card.set_state("waiting")
        waiting = [pending.card for pending in self._calls if pending.card.waiting]
        if waiting:  # a screen reader says so, and a voice reading the answer: nothing runs until they answer
            names = ", ".join(dict.fromkeys(card.name for card in waiting))
            message = (f"{names}: {len(waiting)} tool call{'s' * (len(waiting) > 1)} waiting for you. "
                       "Allow or Deny is on the call's card.")
            announce(waiting[0], message)
            self.waiting_for_person.emit(message)
        self._maybe_done()

    def stop(self) -> None:
        """Stop: running calls are cancelled, waiting ones never run, a turn waiting for its servers is dropped."""
        self._preparing = None
        for pending in self._calls:
            if pending.result is None:
                if pending.future is not None:
                    pending.future.cancel()
                self._finish(pending, Result(STOPPED, is_error=True), "stopped", "stopped")
        self.stopped.emit(self._take_messages())

    def close(self) -> None:
        """The tab is closing: a turn waiting for its servers is never sent, running calls are cancelled."""
        self._preparing = None
        for pending in self._calls:
            if pending.future is not None:
                pending.future.cancel()

    def _on_decided(self, pending: _Call, choice: str) -> None:
        if not pending.card.waiting or pending not in self._calls:
            return
        if choice == "deny":
            self._finish(pending, Result(DECLINED, is_error=True), "declined", "declined")
            self._maybe_done()
            return
        if choice == "always":
            self.service.allow_always(pending.server, pending.call.name)
        self._run(pending, choice if choice == "always" else "allowed")

    def _run(self, pending: _Call, outcome: str) -> None:
        pending.outcome = outcome
        pending.card.always = outcome == "always"
        pending.card.set_state("running")
        call = pending.call
        if pending.server == BUILTIN_SERVER:  # search_chats leaves this chat out
            pending.future = self.service.call_builtin(pending, call.name, call.arguments, self.chat_id,
                                                       also=self._planned)
        else:
            pending.future = self.service.call(pending, pending.server, call.name, call.arguments)

    def _on_call_finished(self, token: object, result: Result) -> None:
        pending = token if isinstance(token, _Call) and token in self._calls else None
        if pending is None or pending.result is not None:
            return  # another tab's call, or one stopped already
        self._finish(pending, result, pending.outcome, "error" if result.is_error else "done")
        self._maybe_done()

    def _finish(self, pending: _Call, result: Result, outcome: str, state: str) -> None:
        pending.result, pending.outcome = result, outcome
        pending.card.set_state(state, " ".join(result.notes))
        self.outcomes[pending.call.id] = outcome
        self.errors[pending.call.id] = result.is_error

    def _maybe_done(self) -> None:
        if self._calls and all(pending.result is not None for pending in self._calls):
            self.sources += [source for pending in self._calls if pending.result is not None
                             for source in [held_by(pending.result.text)] if source]
            self.results_ready.emit(self._take_messages())

    def _take_messages(self) -> list[ChatMessage]:
        calls, self._calls = self._calls, []
        messages = []
        for pending in calls:
            assert pending.result is not None
            messages.append(ChatMessage("tool", pending.result.text, tool_call_id=pending.call.id, name=pending.call.name))
        return messages

    def add_result_card(self, message: ChatMessage) -> ToolResultCard:
        return add_result_card(self.view, message, self.errors.get(message.tool_call_id, False),
                               self.labels.get(message.tool_call_id, ""))


def held_by(result_text: str) -> str:
    """The untrusted source a result names that holds every later call for approval: a page or a search, not
    an MCP server's result (framed as untrusted for the model too, but its tools were the person's own
    choice, and "always allow" for them stays as the person set it)."""
    source = untrusted_source(result_text)
    return "" if is_mcp_source(source) else source


def with_system_note(conversation: list[ChatMessage], note: str) -> list[ChatMessage]:
    """The conversation with `note` at the end of its system message (one is added first where there is none)."""
    if conversation and conversation[0].role == "system":
        first = conversation[0]
        return [replace(first, content=f"{first.content}\n\n{note}"), *conversation[1:]]
    return [ChatMessage("system", note), *conversation]
