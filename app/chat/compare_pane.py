"""One model's side of Compare: its name, its own conversation rendered as a chat's, and its numbers.

A pane is a chat of its own in the engine (its own chat id, naming its model), so the panes of one
comparison stream at once: batched where they share a model, alternating step by step where they do not
(engine/models.py). It shows its conversation with the chat's own widgets (app/chat/message_list.py:
message cards whose Markdown, code blocks and math render as they stream), fed by the chat's AnswerStream
on its ~30 ms tick. A follow-up continues the pane's own conversation; `messages` is what it sends.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.bridge import ChatMessage, TurnFinished
from app.chat.answer_stream import AnswerStream
from app.chat.message_list import MessageCard, MessageList
from app.chat.stats_line import stats_line
from app.misc.accessibility import announce
from engine.units import format_bytes


class ComparePane(QFrame):
    """Events arrive through the window (routed by `chat_id`), as a tab's do."""

    continue_requested = Signal(object)  # this pane: "Continue this one"
    answer_finished = Signal(object, object)  # this pane, the TurnFinished
    text_arrived = Signal(object, str)  # this pane, a piece of its answer (stored as it streams)

    def __init__(self, path: str, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.path, self.name = path, name
        self.chat_id = "compare-" + uuid.uuid4().hex
        self.answering = False
        self.messages: list[ChatMessage] = []  # this pane's conversation: the questions and its model's answers
        self.memory_bytes = 0
        self.tokens_per_second = 0.0
        self.ttft_s: float | None = None
        self.title_label = QLabel(f"<b>{name}</b>")
        self.title_label.setToolTip(path)
        self.view = MessageList(self)
        self.view.setAccessibleName(f"Answers of {name}")
        self.stream = AnswerStream(self)
        self.stats_label = QLabel()
        self.stats_label.setProperty("role", "hint")
        self.continue_button = QPushButton("Continue this one")
        self.continue_button.setToolTip("Open this conversation as a normal chat with this model")
        self.continue_button.setEnabled(False)
        self.continue_button.clicked.connect(lambda: self.continue_requested.emit(self))
        bottom = QHBoxLayout()
        bottom.addWidget(self.stats_label, 1)
        bottom.addWidget(self.continue_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title_label)
        layout.addWidget(self.view, 1)
        layout.addLayout(bottom)
        self._show_stats()

    @property
    def title(self) -> str:
        return f"Compare: {self.name}"

    @property
    def text(self) -> str:
        """The last answer (as streamed so far while it streams)."""
        if self.answering:
            return self.stream.streamed_text
        return next((m.content for m in reversed(self.messages) if m.role == "assistant"), "")

    @property
    def question(self) -> str:
        return next((m.content for m in reversed(self.messages) if m.role == "user"), "")

    def conversation(self) -> list[ChatMessage]:
        """What this pane holds, as a chat: every question and this model's answers."""
        return list(self.messages) if any(m.role == "assistant" for m in self.messages) else []

    def shown_text(self) -> str:
        """Every card's text as shown (rendered: no Markdown marks, code blocks as their code)."""
        return "\n".join(card.browser.toPlainText() for card in self.view.cards())

    def answer_card(self) -> MessageCard | None:
        """The card of the answer streaming now, or the last answer's."""
        cards = [card for card in self.view.cards() if card.role == "assistant"]
        return self.stream.card or (cards[-1] if cards else None)

    def begin(self, question: str) -> None:
        """The next question: its card, and an answer card that streams as the tokens come."""
        self.messages.append(ChatMessage("user", question))
        _read_only(self.view.add_message_card("user", question))
        self.stream.begin(_read_only(self.view.add_card("assistant", "…")))
        self.ttft_s, self.tokens_per_second = None, 0.0
        self.answering = True
        self.continue_button.setEnabled(False)
        self.stream.set_running(True)
        self.view.scroll_to_bottom()
        self._show_stats()

    def wait(self, why: str) -> None:
        """The model is not ready yet (loading): say so where its answer will come."""
        if self.stream.card is not None:
            self.stream.card.set_text(f"*{why}*")

    def set_memory(self, memory_bytes: int) -> None:
        self.memory_bytes = memory_bytes
        self._show_stats()

    def restore(self, entries: Sequence[tuple[ChatMessage, str]]) -> None:
        """A stored comparison reopened: this pane's questions and answers (each with its footer), as they were."""
        for message, footer in entries:
            self.messages.append(message)
            card = _read_only(self.view.add_message_card(message.role, message.content))
            card.set_thinking(message.reasoning)
            card.set_footer(footer)
        self.continue_button.setEnabled(bool(self.conversation()))

    # ------------------------------------------------------------ engine events (the window routes them)

    def on_token(self, text: str) -> None:
        self.stream.on_token(text)
        self.text_arrived.emit(self, text)

    def on_reasoning(self, text: str) -> None:
        self.stream.on_reasoning(text)  # folded in the answer's Thinking block, as in a chat

    def on_stats(self, tokens_per_second: float) -> None:
        self.tokens_per_second = tokens_per_second
        self._show_stats()

    def on_chat_error(self, message: str) -> None:
        self.view.add_card("error", message)

    def on_turn_finished(self, event: TurnFinished) -> None:
        self.stream.flush()
        self.stream.set_running(False)
        text, reasoning = event.text or self.stream.text, event.reasoning or self.stream.thinking.text
        card = self.stream.take_card()
        self.answering = False
        self.tokens_per_second = event.stats.decode_tokens_per_second
        self.ttft_s = event.stats.time_to_first_token_s
        if card is not None and (text or reasoning.strip()):
            self.messages.append(ChatMessage("assistant", text, reasoning))
            card.set_text(text)
            self.stream.thinking.finish(card.thinking_block, reasoning, event.stats, event.reason == "cancelled")
            card.set_footer(stats_line(event))
            announce(card, f"{self.name} finished. {card.accessibleDescription()}")
        elif card is not None:
            card.set_text(f"*{event.message or '(no answer)'}*")
        self.continue_button.setEnabled(bool(self.conversation()))
        self._show_stats()
        self.answer_finished.emit(self, event)

    def stats_text(self) -> str:
        ttft = f"TTFT {self.ttft_s * 1000:.0f} ms" if self.ttft_s is not None else "TTFT …"
        memory = format_bytes(self.memory_bytes) if self.memory_bytes else "memory …"
        return f"{self.tokens_per_second:.1f} tok/s · {ttft} · {memory}"

    def _show_stats(self) -> None:
        self.stats_label.setText(self.stats_text())


def _read_only(card: MessageCard) -> MessageCard:
    """A pane's card keeps Copy (and its code blocks' Copy); editing and deleting happen in a chat (Continue)."""
    for button in (card.edit_button, card.delete_button, card.read_aloud_button, card.branch_bar):
        button.hide()
    return card
