"""A stored conversation put back into a tab's message list (the history reopening a chat or a branch).

A chat without tools shows as plain cards, made lazily by the list. With tools, each call's card sits
inside its answer's card and each result has a card of its own, so every card is made at once (a chat
with tools is rarely long).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.bridge import ChatMessage
from app.chat.message_list import MessageList
from app.chat.stored_tool_calls import add_result_card, restore_cards, stored_labels


def show_stored_conversation(view: MessageList, messages: Sequence[ChatMessage], tool_outcomes: Mapping[str, str],
                             tool_errors: Mapping[str, bool], tool_servers: Mapping[str, str]) -> None:
    """Show `messages` (no system message) in `view`, with their tool calls' outcomes where there are any."""
    if not any(message.role == "tool" or message.tool_calls for message in messages):
        view.set_messages([(message.role, message.content, message.reasoning, message.images, message.dictation)
                           for message in messages])
        return
    view.clear()
    labels = stored_labels(messages)
    for message in messages:
        if message.role == "tool":
            add_result_card(view, message, tool_errors.get(message.tool_call_id, False),
                            labels.get(message.tool_call_id, ""))
        else:
            card = view.add_message_card(message.role, message.content, dictation=message.dictation)
            card.set_thinking(message.reasoning)
            card.set_pictures(message.images)
    restore_cards(view, messages, tool_outcomes, tool_errors, tool_servers)
