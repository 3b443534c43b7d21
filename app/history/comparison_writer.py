"""Storing a comparison as it happens: the question, each pane's answer as it ends, each follow-up.

The shape is app/history/comparison.py's: the question is the root message, each pane's first answer one
of its children, created in pane order, and a follow-up goes below each pane's last message. The chat is
created closed (no tab): the sidebar lists it and reopens it in Compare.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from app.bridge import SamplingParams, TurnFinished
from app.chat.title import title_from_text
from app.history.chat_settings import SAMPLING_KEYS
from app.history.client import HistoryClient
from app.history.comparison import StoredPane, compare_settings


class ComparisonWriter:
    """One comparison's chat in the history; the panes are named by their index, left to right."""

    def __init__(self, client: HistoryClient) -> None:
        self.client = client
        self.chat_id: str | None = None
        self._last: dict[int, str] = {}  # pane index -> id of its last stored message
        self._answers: dict[int, str] = {}  # pane index -> id of its answer under way

    def start(self, question: str, panes: list[tuple[str, str]], sampling: SamplingParams, system_prompt: str) -> str:
        """A new comparison of `panes` ((model path, name) each) with its first question; returns the chat id."""
        values = {key: value for key, value in dataclasses.asdict(sampling).items() if key in SAMPLING_KEYS}
        settings: dict[str, Any] = {**values, "system_prompt": system_prompt}
        described = [{"model": path, "name": name} for path, name in panes]
        names = ", ".join(name for _, name in panes)
        self.chat_id = self.client.create_chat("Compare: " + title_from_text(question), names,
                                               {**settings, **compare_settings(described)}, open_tab=False)
        question_id = self.client.add_message(self.chat_id, "user", question)
        for index, pane in enumerate(described):
            self._answers[index] = pane["answer"] = self.client.start_answer(self.chat_id, question_id)
        self.client.update_chat_settings(self.chat_id, compare_settings(described))
        return self.chat_id

    def resume(self, chat_id: str, panes: list[StoredPane]) -> None:
        """A stored comparison reopened: its follow-ups go below each pane's last message."""
        self.chat_id, self._answers = chat_id, {}
        self._last = {index: pane.messages[-1].id for index, pane in enumerate(panes) if pane.messages}

    def follow_up(self, question: str, indexes: list[int]) -> None:
        """The next question, asked of each pane (its answer starts streaming below it)."""
        if self.chat_id is None:
            return
        for index in indexes:
            question_id = self.client.add_message(self.chat_id, "user", question, self._last.get(index))
            self._answers[index] = self.client.start_answer(self.chat_id, question_id)

    def stream(self, index: int, text: str) -> None:
        """A piece of a pane's answer: written with the others about once a second (a crash keeps it)."""
        if (answer := self._answers.get(index)) is not None:
            self.client.append_streaming_text(answer, text)

    def finish(self, index: int, event: TurnFinished) -> None:
        """A pane's answer ended: its text, numbers and how it ended are stored."""
        answer = self._answers.pop(index, None)
        if answer is not None:
            self.client.finish_turn(answer, event)
            self._last[index] = answer

    def answering(self) -> bool:
        return bool(self._answers)
