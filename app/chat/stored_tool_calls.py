"""A stored chat's tool calls: their cards restored from the history, and a result for every call the model sees.

Separate from the live round (tool_round.py: approval, running, results of the step under way)
because this changes with what the history keeps of a call (its outcome, its server, its label,
an interruption) and with how a reopened chat shows and resends it, not with how calls are run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.bridge import ChatMessage
from app.chat.message_list import MessageList
from app.chat.tool_card import ToolCallCard, ToolResultCard, call_labels

INTERRUPTED = "This call was interrupted (the app closed before it finished) and was not run again."


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
