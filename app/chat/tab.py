"""One chat tab: its conversation, the streaming answer, the input box and its buttons.

Tokens arrive through the window (routed by chat id) and are only buffered;
a ~30 ms timer moves them into the view, so a fast model costs one repaint per
tick, not one per token. A tab that is not visible just keeps its buffer and
renders when it is shown again. A message's Edit button puts its text back in
the input; sending it then replaces that message and everything below it (the
history keeps the old branch as an alternative, "< 1/2 >"). A reasoning model's
thinking streams into the answer card's folded Thinking block on the same tick
(app/chat/thinking_stream.py); the chat's Think setting sits beside the buttons
(app/chat/think_control.py) and goes into each turn's Submit. With MCP tools, an answer that ends
in tool calls hands them to ChatTools (app/chat/tool_round.py), whose results send the chat on.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from app.bridge import ChatMessage, EngineBridge, ModelInfo, SamplingParams, TurnFinished
from app.chat.attachments import AttachmentsBar
from app.chat.document_vectors import Vectors, document_vectors
from app.chat.citations import Citations
from app.settings.store import Settings
from app.chat.message_actions import MessageActions
from app.chat.message_list import MessageCard, MessageList
from app.chat.model_picker import ModelPicker
from app.chat.panel import ChatPanel
from app.chat.stats_line import stats_line
from app.chat.think_control import ThinkControl
from app.chat.thinking_stream import ThinkingStream
from app.chat.title import title_from_text, title_from_user
from app.chat.tool_round import ChatTools, add_result_card, answer_every_call, restore_cards, stored_labels
from app.tools.service import ToolService
from engine.paths import user_path

FLUSH_INTERVAL_MS = 30
Defaults = Callable[[], tuple[SamplingParams, str]]  # sampling, system prompt


class ChatInput(QPlainTextEdit):
    """Enter sends, Shift+Enter starts a new line."""

    submitted = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt override
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
            return
        super().keyPressEvent(event)


class ChatTab(QWidget):
    """A conversation with the model; several tabs answer at the same time."""

    answering_changed = Signal(bool)
    title_changed = Signal(str)
    conversation_changed = Signal(str)  # chat_id: a message was added or removed (history hook)
    # chat_id, index in `messages`: the history does the storing and may show another branch.
    message_edited = Signal(str, int, str)  # ... and the new text; the edited message is `messages[index]` now
    messages_deleted = Signal(str, int)  # messages[index:] were removed
    branch_step_requested = Signal(str, int, int)  # ... and -1/+1: show the previous/next alternative
    think_settings_changed = Signal(str, dict)  # chat_id, the Think choice and budget to store with the chat
    model_chosen = Signal(str, str)  # chat_id, the path of the model the user picked in the header
    compare_requested = Signal(str)  # chat_id: Compare… in the header

    def __init__(
        self, bridge: EngineBridge, defaults: Defaults, title: str, parent: QWidget | None = None, chat_id: str = "",
        tools: ToolService | None = None,
        settings: Settings | None = None,
    ) -> None:
        super().__init__(parent)
        self._settings = settings  # the chat panel's presets and "Save as default"
        self.chat_id = chat_id or uuid.uuid4().hex
        self.title = title
        self.title_from_user = False
        self.messages: list[ChatMessage] = []
        self.model_path = ""  # the model this chat talks to ("" : the window's, the model loaded last)
        self.answering = False
        self._bridge, self._defaults = bridge, defaults
        self._pending: list[str] = []
        self._answer_text = ""
        self.thinking = ThinkingStream()
        self.last_reasoning_s = 0.0  # how long the last turn thought, as shown ("Thought for 12 s")
        self._answer_card: MessageCard | None = None
        self._dirty = False
        self._thinking_dirty = False
        self._error_shown = False
        self._model_ready = False
        self._flush_timer = QTimer(self, interval=FLUSH_INTERVAL_MS)
        self._flush_timer.timeout.connect(self._flush)
        self._build()
        self.chat_tools = ChatTools(tools, self.view, self) if tools is not None else None
        if self.chat_tools is not None:
            self.chat_tools.results_ready.connect(self._on_tool_results)
            self.chat_tools.stopped.connect(self._on_tools_stopped)
        self.set_model_ready(False, "Starting…")

    def _build_header(self) -> QHBoxLayout:
        self.model_picker = ModelPicker(self)
        self.model_picker.model_chosen.connect(self._on_model_picked)
        self.compare_button = QPushButton("Compare…")
        self.compare_button.setToolTip("Send one message to several models side by side")
        self.compare_button.clicked.connect(lambda: self.compare_requested.emit(self.chat_id))
        header = QHBoxLayout()
        header.setContentsMargins(12, 6, 12, 0)
        header.addWidget(self.model_picker)
        header.addWidget(self.compare_button)
        header.addStretch(1)
        return header

    def set_model_path(self, path: str) -> None:
        """The chat's model, as chosen elsewhere (emits nothing)."""
        self.model_path = path
        self.model_picker.set_path(path)

    def choose_model(self, path: str) -> None:
        """As if the user picked `path` in the header (the history restoring the chat's model)."""
        self.set_model_path(path)
        self.model_chosen.emit(self.chat_id, path)

    def _on_model_picked(self, path: str) -> None:
        self.model_path = path
        self.model_chosen.emit(self.chat_id, path)

    def _build(self) -> None:
        self.view = MessageList(self)
        self.citations = Citations(lambda: self.messages, self.view, self)  # "[1]" in an answer shows its excerpt
        self.input = ChatInput(self)
        self.input.setObjectName("chatInput")  # styled in resources/style.qss
        self.input.setAccessibleName("Message")
        self.input.setPlaceholderText("Message the model — Enter sends, Shift+Enter for a new line")
        self.input.setFixedHeight(self.input.fontMetrics().lineSpacing() * 4 + 16)
        self.input.submitted.connect(self.send)
        self.reason = QLabel(self)
        self.reason.setProperty("role", "hint")
        self.reason.setWordWrap(True)
        self.send_button = QPushButton("Send")
        self.send_button.clicked.connect(self.send)
        self.send_button.setProperty("accent", True)
        self.stop_button = QPushButton("Stop")
        self.stop_button.clicked.connect(self.stop)
        self.stop_button.setToolTip("Stop this answer (Esc)")
        self.regenerate_button = QPushButton("Regenerate")
        self.regenerate_button.clicked.connect(self.regenerate)
        self.cancel_edit_button = QPushButton("Cancel edit")
        self.think_control = ThinkControl(self)
        self.think_control.changed.connect(lambda settings: self.think_settings_changed.emit(self.chat_id, settings))
        self.panel = ChatPanel(self._defaults, self._settings, self)
        self.panel.hide()
        self.panel_button = QPushButton("Chat settings")
        self.panel_button.setCheckable(True)
        self.panel_button.setToolTip("This chat's system prompt, sampling and presets (Ctrl+Shift+P)")
        self.panel_button.toggled.connect(self.panel.setVisible)
        self.message_actions = MessageActions(self, self.view, self.input, self.send_button, self.cancel_edit_button, self)
        self.message_actions.deleted.connect(self._on_messages_deleted)
        self.message_actions.edit_cancelled.connect(self._on_edit_cancelled)
        self.message_actions.branch_step_requested.connect(
            lambda index, step: self.branch_step_requested.emit(self.chat_id, index, step))
        buttons = QHBoxLayout()
        buttons.addWidget(self.panel_button)
        buttons.addWidget(self.reason, 10)
        buttons.addStretch(1)  # buttons keep their size when there is no reason to show
        buttons.addWidget(self.think_control)
        for button in (self.cancel_edit_button, self.regenerate_button, self.stop_button, self.send_button):
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 6)
        layout.addLayout(self._build_header())
        self.welcome = QLabel(self)
        self.welcome.setObjectName("welcome")  # styled in resources/style.qss
        self.welcome.setWordWrap(True)
        self.welcome.setContentsMargins(12, 10, 12, 10)
        self.welcome.hide()
        welcome_row = QVBoxLayout()
        welcome_row.setContentsMargins(12, 12, 12, 0)  # aligned with the message cards
        welcome_row.addWidget(self.welcome)
        layout.addLayout(welcome_row)
        middle = QHBoxLayout()
        middle.addWidget(self.view, 1)
        middle.addWidget(self.panel)
        layout.addLayout(middle, 1)
        bottom = QVBoxLayout()
        bottom.setContentsMargins(12, 0, 12, 0)
        self.attachments = AttachmentsBar(lambda: self.chat_id, lambda: self.messages, self._context_length,
                                          self.model_info, self.input, self, self._document_vectors)
        bottom.addWidget(self.attachments)
        self.message_actions.edit_started.connect(self.attachments.show_pictures)
        self.attachments.changed.connect(self._on_refusal_resolved)
        bottom.addWidget(self.input)
        bottom.addLayout(buttons)
        layout.addLayout(bottom)
        self._update_buttons()

    @property
    def streamed_text(self) -> str:
        """The answer streaming now, including what the next tick will show."""
        return self._answer_text + "".join(self._pending)

    # ------------------------------------------------------------ user actions

    def send(self) -> None:
        text = self.input.toPlainText().strip()
        if not text or self.answering or not self._model_ready:
            return
        refusal = self.attachments.refusal()
        if refusal:  # never sent without its pictures: the text and the chips stay
            self.reason.setText(refusal)
            self.reason.show()
            return
        self.input.clear()
        edited = self.message_actions.take_edit()
        if edited is not None:
            self.message_actions.truncate(edited)
        images = self.attachments.images()
        content = self.attachments.message_text(text)  # the files' text goes in too
        self.messages.append(ChatMessage("user", content, images=images))
        card = self.view.add_message_card("user", content)  # the question, the files as chips
        card.set_pictures(images)
        self.view.scroll_to_bottom()
        if not self.title_from_user and len(self.messages) == 1:
            self._set_title(title_from_text(text))  # the store titles the chat by the same rule
        if edited is not None:
            self.message_edited.emit(self.chat_id, edited, text)
        else:
            self.conversation_changed.emit(self.chat_id)
        self._start_turn()

    def _on_refusal_resolved(self) -> None:
        if not self.attachments.refusal() and self.reason.text().endswith("nothing was sent."):
            self.reason.clear()
            self.reason.hide()

    def stop(self) -> None:
        if self.chat_tools is not None and self.chat_tools.busy:
            self.chat_tools.stop()  # a call waiting or running, or servers starting: the engine has no turn of ours
        elif self.answering:
            self._bridge.cancel(self.chat_id)

    def regenerate(self) -> None:
        """Answer the last question again (the old answer is dropped)."""
        if self.answering or not self._model_ready or not self.messages:
            return
        if self.messages[-1].role == "assistant":
            self.messages.pop()
            cards = [card for card in self.view.cards() if card.role == "assistant"]
            if cards:
                self.view.remove_card(cards[-1])
            self.conversation_changed.emit(self.chat_id)
        if self.messages and self.messages[-1].role in ("user", "tool"):
            self._start_turn()

    def set_conversation(self, messages: Sequence[ChatMessage], tool_outcomes: Mapping[str, str] = {},
                         tool_errors: Mapping[str, bool] = {}, tool_servers: Mapping[str, str] = {}) -> None:
        """Show a stored conversation (the history reopening a chat or switching a branch); not while answering."""
        if self.message_actions.editing_index is not None:
            self.message_actions.cancel_edit()
        self.messages = [m for m in messages if m.role != "system"]
        if any(message.role == "tool" or message.tool_calls for message in self.messages):
            # Tool cards sit inside their answers' cards: every card is made (a chat with tools is rarely long).
            self.view.clear()
            labels = stored_labels(self.messages)
            for message in self.messages:
                if message.role == "tool":
                    add_result_card(self.view, message, tool_errors.get(message.tool_call_id, False),
                                    labels.get(message.tool_call_id, ""))
                else:
                    card = self.view.add_message_card(message.role, message.content)
                    card.set_thinking(message.reasoning)
                    card.set_pictures(message.images)
            restore_cards(self.view, self.messages, tool_outcomes, tool_errors, tool_servers)
        else:
            self.view.set_messages([(message.role, message.content, message.reasoning, message.images)
                                    for message in self.messages])
        self.citations.refresh()
        self.view.scroll_to_bottom()
        self._update_buttons()

    def toggle_panel(self) -> None:
        self.panel_button.toggle()

    def rename(self, title: str) -> None:
        self.title_from_user = True
        self._set_title(title_from_user(title))

    def set_think_settings(self, settings: Mapping[str, Any]) -> None:
        """The chat's stored Think choice and budget (the history restoring it)."""
        self.think_control.restore(settings)

    def set_model_ready(self, ready: bool, reason: str = "") -> None:
        """Inputs work only with a model; otherwise say why, visibly. The Think setting follows the model."""
        self._model_ready = ready
        info = self.model_info()
        self.think_control.set_capabilities(info.capabilities if ready and info is not None else ())
        self.input.setEnabled(ready)
        self.reason.setText(reason)
        self.reason.setVisible(bool(reason))
        self.attachments.show_picture_states()  # a picture's chip says whether this model can see it
        self._update_buttons()

    # ------------------------------------------------------------ engine events

    def on_token(self, text: str) -> None:
        self.thinking.answer_started()
        self._pending.append(text)

    def on_reasoning(self, text: str) -> None:
        """A reasoning model thinking aloud: streamed into the answer's folded Thinking block."""
        self.thinking.append(text)

    def on_turn_finished(self, event: TurnFinished) -> None:
        self._flush()
        text, reasoning = event.text or self._answer_text, event.reasoning or self.thinking.text
        card, self._answer_card = self._answer_card, None
        if card is not None:
            cut_short = event.reason not in ("stop", "length", "tool_calls")
            self.last_reasoning_s = self.thinking.finish(card.thinking_block, reasoning, event.stats, cut_short)
        if event.tool_calls and card is not None and self.chat_tools is not None:
            self.messages.append(ChatMessage("assistant", text, reasoning, tool_calls=event.tool_calls))
            card.set_text(text)
            card.set_footer(stats_line(event))
            self.conversation_changed.emit(self.chat_id)
            self.chat_tools.begin(card, event.tool_calls)  # the answer goes on once every call has a result
            return
        if (text or reasoning.strip()) and card is not None:  # a thinking stopped before its answer is kept too
            self.messages.append(ChatMessage("assistant", text, reasoning))
            card.set_text(text)
            card.set_footer(stats_line(event))
            self.conversation_changed.emit(self.chat_id)
        elif card is not None:
            self.view.remove_card(card)
        if event.message and not self._error_shown:  # e.g. the context is full, the model was changed
            self.show_error(event.message)
        self._set_answering(False)

    def on_chat_error(self, message: str) -> None:
        self._error_shown = True
        self.show_error(message)

    def on_stats(self, tokens_per_second: float) -> None:
        if self.answering and self._answer_card is not None:
            self._answer_card.set_footer(f"answering · {tokens_per_second:.1f} tok/s")

    def show_error(self, message: str) -> None:
        self.view.add_card("error", message)

    def _on_tool_results(self, messages: list[ChatMessage]) -> None:
        self._add_tool_messages(messages)
        self._start_turn(new_answer=False)

    def _on_tools_stopped(self, messages: list[ChatMessage]) -> None:
        self._add_tool_messages(messages)
        card, self._answer_card = self._answer_card, None
        if card is not None:  # stopped before the turn was sent (its servers were starting): no answer
            self.view.remove_card(card)
        self._set_answering(False)

    def _add_tool_messages(self, messages: list[ChatMessage]) -> None:
        for message in messages:
            self.messages.append(message)
            if self.chat_tools is not None:
                self.chat_tools.add_result_card(message)
        self.conversation_changed.emit(self.chat_id)

    def _on_edit_cancelled(self) -> None:
        self.attachments.show_pictures(())

    def _on_messages_deleted(self, index: int) -> None:
        self._update_buttons()
        self.messages_deleted.emit(self.chat_id, index)

    # ------------------------------------------------------------ internals

    def _start_turn(self, new_answer: bool = True) -> None:
        if self.chat_tools is not None and new_answer:
            self.chat_tools.new_answer()
        sampling, system_prompt = self.panel.effective(*self._defaults())  # this chat's own changes on top
        conversation = ([ChatMessage("system", system_prompt)] if system_prompt else []) + answer_every_call(self.messages)
        if self.attachments.picture_problem() and any(message.images for message in conversation):
            conversation = [replace(message, images=()) for message in conversation]  # a model chosen since
            self.reason.setText("The earlier pictures were left out: this model cannot see them.")
            self.reason.show()
        self._pending.clear()
        self._answer_text = ""
        self.thinking.reset()
        self.last_reasoning_s = 0.0
        self._error_shown = False
        self._hide_old_footers()
        self._answer_card = self.view.add_card("assistant", "…")
        self.citations.link(self._answer_card, len(self.messages))
        self.view.scroll_to_bottom()
        self._set_answering(True)
        budget = self.think_control.reasoning_budget()
        if budget is not None:
            sampling = replace(sampling, reasoning_budget=budget)
        options = self.think_control.template_options()
        if self.chat_tools is None:
            self._bridge.submit(self.chat_id, conversation, sampling, template_options=options)
        else:
            self.chat_tools.submit_turn(self._bridge, self.chat_id, conversation, sampling, options, self.show_error)

    def model_info(self) -> ModelInfo | None:
        """What the engine loaded for this chat (its own model, not the one loaded last); None while it loads."""
        return self._bridge.chat_model_info(self.chat_id)

    def _document_vectors(self) -> Vectors | None:
        """The embedding Settings asks attached documents to be searched with, besides their words."""
        if self._settings is None:
            return None
        return document_vectors(self._settings.get("documents.embeddings"),
                                user_path(self._settings.get("documents.embedding_model")), self.model_info(),
                                lambda path: self._bridge.embedder(path))

    def _context_length(self) -> int:
        info = self.model_info()
        return info.context_length if info is not None else 4096

    def _flush(self) -> None:
        self._thinking_dirty |= self.thinking.flush()
        if self._pending:
            self._answer_text += "".join(self._pending)
            self._pending.clear()
            self._dirty = True
        if not self.isVisible() or self._answer_card is None:
            return
        if self._dirty:
            self._answer_card.set_text(self._answer_text or ("…" if self.thinking.text else ""))
            self._dirty = False
        if self._thinking_dirty or self.thinking.thinking:  # the seconds count on while it thinks
            self.thinking.show(self._answer_card.thinking_block)
            self._thinking_dirty = False

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        self._flush()  # catch up on what streamed while the tab was hidden

    def _set_answering(self, answering: bool) -> None:
        self.answering = answering
        if answering:
            self._flush_timer.start()
        else:
            self._flush_timer.stop()
        self._update_buttons()
        self.answering_changed.emit(answering)

    def set_welcome(self, text: str) -> None:
        """What an empty chat shows until its first message."""
        self.welcome.setText(text)
        self._update_buttons()

    def _update_buttons(self) -> None:
        self.welcome.setVisible(bool(self.welcome.text()) and not self.messages)
        self.send_button.setEnabled(self._model_ready and not self.answering)
        self.stop_button.setEnabled(self.answering)
        can_regenerate = bool(self.messages) and self.messages[-1].role in ("user", "assistant")
        self.regenerate_button.setEnabled(self._model_ready and not self.answering and can_regenerate)

    def _hide_old_footers(self) -> None:
        for card in self.view.cards():
            card.set_footer("")

    def _set_title(self, title: str) -> None:
        self.title = title
        self.title_changed.emit(self.title)
