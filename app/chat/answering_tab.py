"""A chat tab's turns: sending one to the engine, streaming its answer, and what the end of it leaves.

ChatTab (app/chat/tab.py) is this widget with its controls and the user's actions; this base holds
the turn's life alone: the request (app/chat/turn.py), the AnswerStream painting the answer on its
tick, the engine's events for the chat, and the tool round that sends the chat on
(app/chat/tool_round.py). It changes when the engine's events or the turn's request change, not
when a button moves.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QLabel, QWidget

from app.bridge import ChatMessage, EngineBridge, SamplingParams, TurnFinished
from app.chat.answer_stream import AnswerStream
from app.chat.attachments import AttachmentsBar
from app.chat.citations import Citations
from app.chat.message_list import MessageList
from app.chat.panel import ChatPanel
from app.chat.research import ResearchMode
from app.chat.stats_line import stats_line
from app.chat.think_control import ThinkControl
from app.chat.thinking_stream import ThinkingStream
from app.chat.tool_round import ChatTools
from app.chat.turn import PICTURES_LEFT_OUT, prepare_turn
from app.misc.accessibility import announce

Defaults = Callable[[], tuple[SamplingParams, str]]  # sampling, system prompt
# A turn that reached max tokens with nothing to show (a tool call cut short is left out, a thought may be
# all there was): without a word the answer would just vanish.
NOTHING_BEFORE_THE_LIMIT = ("The answer reached its token limit before it said anything (a tool call cut short is "
                            "left out). Raise Max tokens in the chat panel and regenerate.")


class AnsweringTab(QWidget):
    """The turns of one chat; the subclass makes the widgets named below before the first turn."""

    answering_changed = Signal(bool)
    conversation_changed = Signal(str)  # chat_id: a message was added or removed (history hook)

    chat_id: str
    messages: list[ChatMessage]
    chat_tools: ChatTools | None
    view: MessageList
    citations: Citations
    panel: ChatPanel
    think_control: ThinkControl
    attachments: AttachmentsBar
    reason: QLabel
    research: ResearchMode

    def __init__(self, bridge: EngineBridge, defaults: Defaults, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge, self._defaults = bridge, defaults
        self.answering = False
        self.stream = AnswerStream(self)
        self.last_reasoning_s = 0.0  # how long the last turn thought, as shown ("Thought for 12 s")
        self._error_shown = False

    @property
    def thinking(self) -> ThinkingStream:
        """The thinking of the turn streaming now."""
        return self.stream.thinking

    @property
    def streamed_text(self) -> str:
        """The answer streaming now, including what the next tick will show."""
        return self.stream.streamed_text

    def _connect_tools(self) -> None:
        if self.chat_tools is not None:
            self.chat_tools.results_ready.connect(self._on_tool_results)
            self.chat_tools.stopped.connect(self._on_tools_stopped)

    # ------------------------------------------------------------ engine events

    def on_token(self, text: str) -> None:
        self.stream.on_token(text)

    def on_reasoning(self, text: str) -> None:
        """A reasoning model thinking aloud: streamed into the answer's folded Thinking block."""
        self.stream.on_reasoning(text)

    def on_turn_finished(self, event: TurnFinished) -> None:
        self.stream.flush()
        text, reasoning = event.text or self.stream.text, event.reasoning or self.thinking.text
        card = self.stream.take_card()
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
            text = self.research.sourced(text, event.reason)  # a research answer lists the pages it cites
            self.messages.append(ChatMessage("assistant", text, reasoning))
            card.set_text(text)
            if self.research.state in ("done", "stopped"):
                self.research.fold(card)
            card.set_footer(stats_line(event))
            self.conversation_changed.emit(self.chat_id)
            announce(card, f"Answer finished. {card.accessibleDescription()}")  # a screen reader reads it out
        elif card is not None:
            self.view.remove_card(card)
        message = event.message or (NOTHING_BEFORE_THE_LIMIT if event.reason == "length" and not text else "")
        if message and not self._error_shown:  # e.g. the context is full, the model was changed
            self.show_error(message)
        self._set_answering(False)

    def on_chat_error(self, message: str) -> None:
        self._error_shown = True
        self.show_error(message)

    def on_stats(self, tokens_per_second: float) -> None:
        if self.answering and self.stream.card is not None:
            self.stream.card.set_footer(f"answering · {tokens_per_second:.1f} tok/s")

    def show_error(self, message: str) -> None:
        card = self.view.add_card("error", message)
        announce(card, f"Error: {message}", assertive=True)

    def _on_tool_results(self, messages: list[ChatMessage]) -> None:
        self._add_tool_messages(messages)
        self._start_turn(new_answer=False)

    def _on_tools_stopped(self, messages: list[ChatMessage]) -> None:
        self._add_tool_messages(messages)
        card = self.stream.take_card()
        if card is not None:  # stopped before the turn was sent (its servers were starting): no answer
            self.view.remove_card(card)
        self._set_answering(False)

    def _add_tool_messages(self, messages: list[ChatMessage]) -> None:
        for message in messages:
            self.messages.append(message)
            if self.chat_tools is not None:
                self.chat_tools.add_result_card(message)
        self.conversation_changed.emit(self.chat_id)

    # ------------------------------------------------------------ the turn

    def _start_turn(self, new_answer: bool = True) -> None:
        if self.chat_tools is not None and new_answer:
            self.chat_tools.new_answer()
            self.research.begin()  # a research turn when its switch is on
        sampling, system_prompt = self.panel.effective(*self._defaults())  # this chat's own changes on top
        turn = prepare_turn(self.messages, sampling, system_prompt, self.think_control,
                            model_sees_pictures=not self.attachments.picture_problem())
        if turn.pictures_left_out:  # a model chosen since they were sent
            self.reason.setText(PICTURES_LEFT_OUT)
            self.reason.show()
        self.last_reasoning_s = 0.0
        self._error_shown = False
        for old in self.view.cards():
            old.set_footer("")
        card = self.view.add_card("assistant", "…")
        self.stream.begin(card)
        self.citations.link(card, len(self.messages))
        self.view.scroll_to_bottom()
        self._set_answering(True)
        if self.chat_tools is None:
            self._bridge.submit(self.chat_id, turn.conversation, turn.sampling, template_options=turn.template_options)
        else:
            self.chat_tools.submit_turn(self._bridge, self.chat_id, turn.conversation, turn.sampling,
                                        turn.template_options, self.show_error)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.stream.flush()  # catch up on what streamed while the tab was hidden

    def _set_answering(self, answering: bool) -> None:
        self.answering = answering
        self.stream.set_running(answering)
        self._update_buttons()
        self.answering_changed.emit(answering)

    def _update_buttons(self) -> None:
        """Enable what the tab's state allows (the subclass has the buttons)."""
