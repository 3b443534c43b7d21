"""One chat tab: its widgets and the user's actions on its conversation.

A message's Edit button puts its text back in the input; sending it then replaces that message and
everything below it (the history keeps the old branch as an alternative, "< 1/2 >"). The chat's
Think setting sits beside the buttons (app/chat/think_control.py). How a turn is sent, streamed and
finished is the base class's (app/chat/answering_tab.py), the chat's model and whether it is ready
the one between (app/chat/tab_readiness.py); where the widgets sit is
app/chat/tab_layout.py. The tab owns helpers for the parts that change for their own reasons: what
Send does and the queue (app/chat/tab_sending.py), the chat's choice of model and its state
(app/chat/tab_model.py), and the speaker and microphone (app/chat/tab_voice.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFocusEvent
from PySide6.QtWidgets import QPushButton, QWidget

from app.bridge import ChatMessage, EngineBridge
from app.chat.answer_stream import FLUSH_INTERVAL_MS
from app.chat.answering_tab import Defaults
from app.chat.attachments import AttachmentsBar
from app.chat.citations import Citations
from app.chat.find_bar import FindBar
from app.chat.message_actions import MessageActions
from app.chat.message_list import MessageList
from app.chat.message_queue import MessageQueue
from app.chat.panel import ChatPanel
from app.chat.research import ResearchMode
from app.chat.stored_conversation import show_stored_conversation
from app.chat.tab_layout import (ChatInput, arrange_tab, buttons_row, header_row, panel_toggle, push_button,
                                 reason_label, welcome_label)
from app.chat.tab_model import ChatModel
from app.chat.tab_readiness import ReadinessTab
from app.chat.tab_sending import Sending
from app.chat.tab_voice import ChatVoice
from app.chat.think_control import ThinkControl
from app.chat.title import title_from_text, title_from_user
from app.chat.tool_round import ChatTools
from app.chat.transcript_keys import install_message_keys
from app.misc.focus_order import enter_focus, step_focus
from app.settings.store import Settings
from app.tools.service import ToolService
from app.voice.answer_aloud import AnswerAloud
from engine.protocol import Dictation

__all__ = ["FLUSH_INTERVAL_MS", "ChatInput", "ChatTab", "Defaults"]


class ChatTab(ReadinessTab):
    """A conversation with the model; several tabs answer at the same time."""

    title_changed = Signal(str)
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
        super().__init__(bridge, defaults, parent)
        self._settings = settings  # the chat panel's presets and "Save as default"
        self.chat_id = chat_id or uuid.uuid4().hex
        self.title = title
        self.title_from_user = False
        self.messages: list[ChatMessage] = []
        self._build()
        self.chat_tools = ChatTools(tools, self.view, self) if tools is not None else None
        self._connect_tools()
        self.research.set_available(self.chat_tools is not None)
        if self.chat_tools is not None:
            self.chat_tools.planner = self.research.step
            self.chat_tools.waiting_for_person.connect(self.answer_aloud.say)
        self.set_model_ready(False, "Starting…")

    def _build(self) -> None:
        # Made in this order, so that Tab moves through them as it always has.
        self.view = MessageList(self)
        self.citations = Citations(lambda: self.messages, self.view, self)  # "[1]" in an answer shows its excerpt
        # What was sent while answering, above the input; sent on when the chat is free.
        self.message_queue = MessageQueue(lambda: not self.answering and self.chat_model.ready,
                                          lambda text: self.sending.send_text(text, typed=False), self)
        self.input = ChatInput(self)
        self.input.submitted.connect(self.send)
        self.voice = ChatVoice(self.view, self.input, self._settings, self.send, self._show_problem, self)
        self.read_aloud, self.dictation = self.voice.read_aloud, self.voice.dictation  # the speaker, the microphone
        self._build_controls()
        self._build_message_actions()
        self._build_header()
        self.welcome = welcome_label(self)
        self.attachments = AttachmentsBar(lambda: self.chat_id, lambda: self.messages, self.chat_model.context_length,
                                          self.model_info, self.input, self, self.chat_model.document_vectors)
        self.sending = Sending(self.input, self.message_queue, self.dictation, self.attachments, self.message_actions,
                               self.reason, self.chat_model, lambda: self.answering, self._ask)
        self.research = ResearchMode(self.view, lambda: self.messages, self)  # the switch beside Think
        self.answering_changed.connect(self.research.on_answering_changed)
        self.message_actions.edit_started.connect(self.attachments.show_pictures)
        self.attachments.changed.connect(self.sending.on_refusal_resolved)
        buttons = buttons_row(self.panel_button, self.reason, self.think_control, (self.research.switch,
                              self.cancel_edit_button, self.regenerate_button, self.stop_button, self.send_button))
        self.setFocusPolicy(Qt.FocusPolicy.TabFocus)  # see focusInEvent
        self.find_bar = FindBar(self.view, self)
        self.conversation_changed.connect(lambda _chat_id: self.find_bar.refresh())
        self.answering_changed.connect(self.find_bar.set_live)
        self.answering_changed.connect(self.sending.on_answering_changed)
        self.answer_aloud = AnswerAloud(self.read_aloud, lambda: self.streamed_text, self._last_answer,
                                        self.answering_changed, self)
        self.conversation = self.voice.converse(self.answer_aloud.switch, lambda: self.answering,
                                                self.answering_changed, self)  # listen again after the answer
        header = header_row((self.model_picker, self.compare_button, self.answer_aloud.switch))
        arrange_tab(self, header, self.welcome, self.view,
                    self.panel, (self.message_queue, self.attachments, self.research.status, self.dictation.row),
                    buttons, (self.find_bar,))
        install_message_keys(self, self.view, self.input)
        self._update_buttons()

    def _build_controls(self) -> None:
        self.reason = reason_label(self)
        self.send_button = push_button("Send", self.send, accent=True)
        self.stop_button = push_button("Stop", self.stop, "Stop this answer (Esc)")
        self.regenerate_button = push_button("Regenerate", self.regenerate)
        self.cancel_edit_button = QPushButton("Cancel edit")
        self.think_control = ThinkControl(self)
        self.think_control.changed.connect(lambda settings: self.think_settings_changed.emit(self.chat_id, settings))
        self.panel = ChatPanel(self._defaults, self._settings, self)
        self.panel.hide()
        self.panel_button = panel_toggle(self.panel)

    def _build_message_actions(self) -> None:
        self.message_actions = MessageActions(self, self.view, self.input, self.send_button, self.cancel_edit_button, self)
        self.message_actions.deleted.connect(self._on_messages_deleted)
        self.message_actions.edit_cancelled.connect(self._on_edit_cancelled)
        self.message_actions.branch_step_requested.connect(
            lambda index, step: self.branch_step_requested.emit(self.chat_id, index, step))

    def _build_header(self) -> None:
        self.chat_model = ChatModel(self._bridge, lambda: self.chat_id, self._settings, self)
        self.chat_model.chosen.connect(lambda path: self.model_chosen.emit(self.chat_id, path))
        self.model_picker = self.chat_model.picker
        self.compare_button = QPushButton("Compare…", self)
        self.compare_button.setToolTip("Send one message to several models side by side")
        self.compare_button.clicked.connect(lambda: self.compare_requested.emit(self.chat_id))

    # ------------------------------------------------------------ user actions

    def send(self) -> None:
        """Send what the input holds; while an answer streams it is queued and sent when the answer ends."""
        self.sending.send()

    def _ask(self, text: str, dictation: Dictation | None, edited: int | None) -> None:
        """Add the user's message (`edited`: the index of the one it replaces) and start the turn."""
        if edited is not None:
            self.message_actions.truncate(edited)
        images = self.attachments.images()
        content = self.attachments.message_text(text)  # the files' text goes in too
        self.messages.append(ChatMessage("user", content, images=images, dictation=dictation))
        card = self.view.add_message_card("user", content, dictation=dictation)  # the question, files as chips
        card.set_pictures(images)
        self.view.scroll_to_bottom()
        if not self.title_from_user and len(self.messages) == 1:
            self._set_title(title_from_text(text))  # the store titles the chat by the same rule
        if edited is not None:
            self.message_edited.emit(self.chat_id, edited, text)
        else:
            self.conversation_changed.emit(self.chat_id)
        self._start_turn()

    def _focus_groups(self) -> tuple[QWidget, ...]:
        """Where Tab goes in this tab, in order: header, find, messages, queue, input, buttons, panel."""
        return (self.model_picker, self.compare_button, self.find_bar, self.view, self.message_queue,
                self.attachments, self.input, self.dictation.button, self.panel_button, self.think_control,
                self.research.switch, self.cancel_edit_button, self.regenerate_button, self.stop_button,
                self.send_button, self.panel)

    def focusNextPrevChild(self, next: bool) -> bool:
        # Qt's chain puts what was made later (cards, code blocks) at the window's end: go as the tab is seen.
        return step_focus(self, self._focus_groups(), next) or super().focusNextPrevChild(next)

    def focusInEvent(self, event: QFocusEvent) -> None:
        """Tab from outside reaches the tab itself (it precedes its children in Qt's chain): on to its first stop."""
        super().focusInEvent(event)
        enter_focus(self._focus_groups(), event.reason() != Qt.FocusReason.BacktabFocusReason)

    def find_in_chat(self) -> None:
        self.find_bar.open()

    def _last_answer(self) -> str:
        return self.messages[-1].content if self.messages and self.messages[-1].role == "assistant" else ""

    def _show_problem(self, problem: str) -> None:
        """A voice problem (no voice chosen, no microphone), where the tab says why."""
        self.reason.setText(problem)
        self.reason.show()

    def stop(self) -> None:
        self.conversation.stop()  # and the spoken conversation: no listening again after this answer
        self.read_aloud.stop()  # Stop stops the voice too
        if self.chat_tools is not None and self.chat_tools.busy:
            self.chat_tools.stop()  # a call waiting or running, or servers starting: the engine has no turn of ours
        elif self.answering:
            self._bridge.cancel(self.chat_id)

    def regenerate(self) -> None:
        """Answer the last question again (the old answer is dropped)."""
        if self.answering or not self.chat_model.ready or not self.messages:
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
        show_stored_conversation(self.view, self.messages, tool_outcomes, tool_errors, tool_servers)
        self.research.fold_stored(self.messages)
        self.citations.refresh()
        self.view.scroll_to_bottom()
        self._update_buttons()

    def toggle_panel(self) -> None:
        self.panel_button.toggle()

    def rename(self, title: str) -> None:
        self.title_from_user = True
        self._set_title(title_from_user(title))

    def set_welcome(self, text: str) -> None:
        """What an empty chat shows until its first message."""
        self.welcome.setText(text)
        self._update_buttons()

    def _on_edit_cancelled(self) -> None:
        self.attachments.show_pictures(())

    def _on_messages_deleted(self, index: int) -> None:
        self._update_buttons()
        self.messages_deleted.emit(self.chat_id, index)

    def _update_buttons(self) -> None:
        self.welcome.setVisible(bool(self.welcome.text()) and not self.messages)
        self.send_button.setEnabled(self.chat_model.takes_messages and not self.answering)
        self.stop_button.setEnabled(self.answering)
        can_regenerate = bool(self.messages) and self.messages[-1].role in ("user", "assistant")
        self.regenerate_button.setEnabled(self.chat_model.ready and not self.answering and can_regenerate)

    def _set_title(self, title: str) -> None:
        self.title = title
        self.title_changed.emit(self.title)
