"""One tab's tool calls: cards, approval, running, results, and whether the answer goes on.

When an answer ends in tool calls, each call gets a card inside that answer (app/chat/tool_card.py).
Nothing runs before the person allows it, unless the tool is always allowed; each allowed call runs
at once, so the independent calls of one step run together. When every call of the step has a
result (or was declined) the tab is handed the tool messages, in call order, and sends the
conversation on; after `tools.max_rounds` steps the model is offered no tools and must answer.
While calls wait or run the chat holds no engine work: the engine finished its turn. Nor does it
while the servers start before a turn (the first one needs their tools): Stop then drops the turn,
and nothing is sent when they come up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from app.bridge import ChatMessage, EngineBridge, SamplingParams
from app.chat.message_list import MessageCard, MessageList
from app.chat.tool_card import ToolCallCard, ToolResultCard, call_labels
from app.tools.service import ToolService
from engine.protocol import ToolCall, ToolSpec
from engine.tools.results import ToolResult as Result

DECLINED = "The user declined this call; it did not run."
STOPPED = "The user stopped this call before it finished."
INTERRUPTED = "This call was interrupted (the app closed before it finished) and was not run again."
NOT_OFFERED = "There is no tool named {name}; it did not run."


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
        specs = self.specs()
        if specs:
            choice = self.tool_choice if self.rounds == 0 else "auto"
            bridge.submit(chat_id, conversation, sampling, template_options=options, tools=specs, tool_choice=choice)
        else:  # none enabled, or the step limit reached: the model must answer
            bridge.submit(chat_id, conversation, sampling, template_options=options)

    def specs(self) -> tuple[ToolSpec, ...]:
        """What the next turn offers: every enabled tool, none once the step limit is reached."""
        self._offered = self.service.offered()
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
            if not server:
                self._finish(pending, Result(NOT_OFFERED.format(name=call.name), is_error=True), "unknown", "unknown")
            elif self.service.always_allowed(server, call.name):
                self._run(pending, "always")
            else:
                pending.card.set_state("waiting")
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
        pending.future = self.service.call(pending, pending.server, pending.call.name, pending.call.arguments)

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


def add_result_card(view: MessageList, message: ChatMessage, is_error: bool, label: str = "") -> ToolResultCard:
    card = ToolResultCard(message.name, message.content, is_error, label)
    view.add_card("tool", card=card)
    return card


def restore_cards(view: MessageList, messages: Sequence[ChatMessage], outcomes: Mapping[str, str],
                  errors: Mapping[str, bool], servers: Mapping[str, str] = {}) -> None:
    """A stored chat's tool cards: each call's card in its answer (with its server, where it was known);
    a call with no result shows as interrupted."""
    answered = {message.tool_call_id for message in messages if message.role == "tool"}
    cards = view.message_cards()
    for card, message in zip(cards, messages):
        if message.tool_calls and not message.content.strip():
            card.browser.hide()
        labels = call_labels(message.tool_calls)
        for call in message.tool_calls:
            call_card = ToolCallCard(call.name, servers.get(call.id, ""), call.arguments, labels.get(call.id, ""))
            card.add_part(call_card)
            outcome = outcomes.get(call.id, "")
            call_card.always = outcome == "always"  # stored with its result: it ran because the tool is always allowed
            if call.id not in answered or outcome in ("", "interrupted"):
                call_card.set_state("interrupted")
            else:
                state = {"declined": "declined", "stopped": "stopped", "unknown": "unknown"}.get(outcome)
                call_card.set_state(state or ("error" if errors.get(call.id) else "done"))


def stored_labels(messages: Sequence[ChatMessage]) -> dict[str, str]:
    """Call id -> its label (call_labels) over every answer of a stored chat, for the result cards."""
    return {call_id: label for message in messages if message.tool_calls
            for call_id, label in call_labels(message.tool_calls).items()}


def answer_every_call(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The conversation for the model: a call left without a result (interrupted) gets one saying it did not run."""
    answered = {message.tool_call_id for message in messages if message.role == "tool"}
    complete: list[ChatMessage] = []
    for index, message in enumerate(messages):
        complete.append(message)
        following = messages[index + 1] if index + 1 < len(messages) else None
        if message.tool_calls and (following is None or following.role != "tool"):
            complete.extend(ChatMessage("tool", INTERRUPTED, tool_call_id=call.id, name=call.name)
                            for call in message.tool_calls if call.id not in answered)
    return complete
