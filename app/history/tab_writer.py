"""What the tabs do, written to the chat history as it happens: new chats, user and tool messages,
streaming answers, titles and each chat's panel; none of these calls blocks (HistoryClient queues them).

HistoryUI (app/history/sync.py) owns one TabWriter and hands it the window's events. The stored ids of
the messages each tab shows live here (`ids`), parallel to `tab.messages`, so a new message knows its
parent; the reading side (restoring, switching branches) fills them in as it shows a stored chat.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from app.bridge import TurnFinished
from app.chat.tab import ChatTab
from app.history.chat_settings import PANEL
from app.history.client import HistoryClient


class TabWriter:
    """Stores each tab's messages and its answer as it streams; remembers an answer dropped for Regenerate."""

    def __init__(self, client: HistoryClient, tab: Callable[[str], ChatTab | None],
                 refresh_branches: Callable[[str], None], restoring: Callable[[], bool]) -> None:
        self.client = client
        self._tab, self._refresh_branches, self._restoring = tab, refresh_branches, restoring
        self.ids: dict[str, list[str]] = {}  # chat id -> stored ids of the tab's messages
        self._answers: dict[str, str] = {}  # chat id -> id of the answer streaming now
        self._regenerate_of: dict[str, str] = {}  # chat id -> answer dropped for Regenerate

    # ------------------------------------------------------------ chats

    def create_chat(self, tab: ChatTab, model: str, settings: dict[str, Any]) -> None:
        """A new tab's chat, stored with the model, the sampling settings and its panel's values."""
        settings = {**settings, **self.panel_record(tab)}
        if tab.model_path:
            settings = {**settings, "model_path": tab.model_path}
        self.client.create_chat(tab.title if tab.title_from_user else "", model, settings, tab.chat_id)

    @staticmethod
    def panel_record(tab: ChatTab) -> dict[str, Any]:
        """The chat's own changes, and the values in effect (what an export says the chat uses)."""
        return {**tab.panel.values(), PANEL: dict(tab.panel.overrides)}

    def store_panel(self, tab: ChatTab) -> None:
        if not self._restoring() and tab.chat_id in self.ids:
            self.client.update_chat_settings(tab.chat_id, self.panel_record(tab))

    def title_changed(self, tab: ChatTab, title: str) -> None:
        if tab.title_from_user and not self._restoring():
            self.client.rename_chat(tab.chat_id, title)

    # ------------------------------------------------------------ messages

    def store_conversation(self, tab: ChatTab) -> None:
        """A tab that starts with its messages (a Compare pane continued as a chat): each one is stored."""
        ids = self.ids.setdefault(tab.chat_id, [])
        for message in tab.messages[len(ids):]:
            ids.append(self.client.add_message(tab.chat_id, message.role, message.content, parent_id=ids[-1] if ids else None,
                                               images=message.images))

    def conversation_changed(self, chat_id: str) -> None:
        """Store the user messages the tab added; remember an answer it dropped for Regenerate."""
        tab, ids = self._tab(chat_id), self.ids.get(chat_id)
        if tab is None or ids is None:
            return
        while len(ids) > len(tab.messages):
            self._regenerate_of[chat_id] = ids.pop()
        for message in tab.messages[len(ids):]:
            parent = ids[-1] if ids else None
            if message.role == "user":
                ids.append(self.client.add_message(chat_id, "user", message.content, parent_id=parent, images=message.images,
                                                   dictation=message.dictation))
            elif message.role == "tool" and tab.chat_tools is not None:
                outcome = tab.chat_tools.outcomes.get(message.tool_call_id, "")
                outcome += " error" if tab.chat_tools.errors.get(message.tool_call_id) else ""
                ids.append(self.client.add_tool_message(chat_id, message.content, parent, message.tool_call_id,
                                                        message.name, outcome))
            else:
                break  # answers are stored from the engine's events

    # ------------------------------------------------------------ the answer streaming

    def turn_started(self, chat_id: str) -> None:
        self._answer_id(chat_id)
        if (tab := self._tab(chat_id)) is not None:
            self.store_panel(tab)  # the defaults it follows may have changed since

    def _answer_id(self, chat_id: str) -> str | None:
        """The stored answer streaming for this chat, started on its first event."""
        if chat_id in self._answers:
            return self._answers[chat_id]
        ids = self.ids.get(chat_id)
        if ids is None:
            return None
        dropped = self._regenerate_of.pop(chat_id, None)
        answer = self.client.regenerate(dropped) if dropped else self.client.start_answer(chat_id, ids[-1] if ids else None)
        self._answers[chat_id] = answer
        return answer

    def token(self, chat_id: str, text: str) -> None:
        if (answer := self._answer_id(chat_id)) is not None:
            self.client.append_streaming_text(answer, text)

    def reasoning(self, chat_id: str, text: str) -> None:
        """A reasoning model's thinking: stored with its answer as it streams, like the text."""
        if (answer := self._answer_id(chat_id)) is not None:
            self.client.append_streaming_reasoning(answer, text)

    def turn_finished(self, event: TurnFinished) -> None:
        answer = self._answers.pop(event.chat_id, None)
        if answer is None:
            return
        shown = (event.text or event.reasoning or event.tool_calls or self.client.streamed_text(answer)
                 or self.client.streamed_reasoning(answer))
        ids, tab = self.ids.get(event.chat_id), self._tab(event.chat_id)
        if not shown:  # the tab shows no answer: keep none either
            self.client.discard_answer(answer)
        else:
            servers = tab.chat_tools.servers if tab is not None and tab.chat_tools is not None else {}
            event = _as_kept(event, tab, ids)
            self.client.finish_turn(answer, event, tab.last_reasoning_s if tab is not None else 0.0,
                                    {call.id: servers[call.id] for call in event.tool_calls if servers.get(call.id)})
            if ids is not None and tab is not None and len(ids) < len(tab.messages):
                ids.append(answer)
        if event.chat_id in self.ids:
            self._refresh_branches(event.chat_id)  # a regenerated answer or an edit made a new alternative

    def interrupt_all(self) -> None:
        """Answers still streaming are stored as interrupted (the window is closing)."""
        for answer in self._answers.values():
            self.client.finish_answer(answer, None, "interrupted", finish_reason="closed")
        self._answers.clear()


def _as_kept(event: TurnFinished, tab: ChatTab | None, ids: list[str] | None) -> TurnFinished:
    """The finished answer with the text its tab keeps, where the tab added to it (a research answer lists the
    pages it cites: app/chat/research.py); the tab handles the event before the history does."""
    kept = tab.messages[-1] if tab is not None and ids is not None and len(ids) < len(tab.messages) else None
    if kept is None or kept.role != "assistant" or kept.tool_calls or not event.text or kept.content == event.text:
        return event
    return dataclasses.replace(event, text=kept.content)
