"""Research mode in a chat tab: a switch beside the input, a status line with the limits, the steps folded.

With the switch on, a message is answered by a research turn (engine/tools/research_plan.py): the model
searches, reads pages one round each, and answers citing them as [1], [2] … with the pages listed under
the answer. Every call is an ordinary tool call of the chat (app/chat/tool_round.py): it waits on its
card unless its tool is always allowed and nothing untrusted came before it, which after the search is
never, so each page is read only once the person allows it. The status line shows the round, the pages
read and the time against their limits while it runs; Stop ends it like any answer. Once the answer is
in, its steps' cards are folded behind a button on the answer's card; a chat reopened from the history
folds them the same way (the trace is its stored messages).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QLabel, QToolButton, QWidget

from app.chat.message_list import MessageCard, MessageList
from engine.protocol import ChatMessage
from engine.tools.research import ResearchLimits
from engine.tools.research_plan import (
    ResearchStep,
    is_research_answer,
    next_step,
    pages_read,
    since_question,
    status_line,
    with_sources,
)

WINDOW_LIMITS = ResearchLimits(rounds=6, pages=3, time_s=180.0, answer_chars=1200)
SWITCH_TIP = ("Research mode: the next message is answered from the web. The model searches, reads a few "
              "pages and answers with numbered sources. Each search and page waits for your approval.")
NO_TOOLS = "Research mode needs the tools service, which this window does not have."


class ResearchMode(QObject):
    """One tab's research switch and the research turn under way."""

    def __init__(self, view: MessageList, messages: Callable[[], Sequence[ChatMessage]], parent: QWidget) -> None:
        super().__init__(parent)
        self._view, self._messages = view, messages
        self.limits = WINDOW_LIMITS
        self.clock: Callable[[], float] = time.monotonic
        self.state = "idle"  # "running" (search and reading), "answering", "done", "stopped"
        self._started = self._elapsed = 0.0
        self.switch = QToolButton(parent)
        self.switch.setObjectName("researchSwitch")
        self.switch.setText("Research")
        self.switch.setCheckable(True)
        self.switch.setToolTip(SWITCH_TIP)
        self.switch.setAccessibleName("Research mode")
        self.switch.setAccessibleDescription(SWITCH_TIP)
        self.switch.toggled.connect(self._on_switched)
        self.status = QLabel(parent)
        self.status.setObjectName("researchStatus")
        self.status.setProperty("role", "hint")
        self.status.setAccessibleName("Research status")
        self._timer = QTimer(self)
        self._timer.setInterval(1000)  # the clock on the status line
        self._timer.timeout.connect(self.show_status)
        self.show_status()

    @property
    def running(self) -> bool:
        return self.state in ("running", "answering")

    def _on_switched(self, on: bool) -> None:
        if not on and not self.running:  # the last run's line goes with the switch; a run under way keeps it
            self.state = "idle"
        self.show_status()

    def set_available(self, available: bool) -> None:
        self.switch.setEnabled(available)
        if not available:
            self.switch.setToolTip(NO_TOOLS)

    def begin(self) -> None:
        """A new answer starts: it is a research turn when the switch is on."""
        if not (self.switch.isChecked() and self.switch.isEnabled()):
            self.state = "idle"
            self.show_status()
            return
        self.state, self._started, self._elapsed = "running", self.clock(), 0.0
        self._timer.start()
        self.show_status()

    def step(self, conversation: Sequence[ChatMessage]) -> ResearchStep | None:
        """The round to send now (app/chat/tool_round.py asks before each submit); None: not researching."""
        if not self.running:
            return None
        step = next_step(conversation, self.limits, self.clock() - self._started)
        if step.kind == "answer":
            self.state = "answering"
        self.show_status()
        return step

    def sourced(self, answer: str, reason: str) -> str:
        """The research answer with its pages listed under it (other answers as they are); `reason`: how the
        turn ended (an answer Stop cut short keeps its sources, and the status says it was stopped)."""
        if self.state != "answering":
            return answer
        self.state = "done" if reason in ("stop", "length") else "stopped"
        return with_sources(answer, pages_read(since_question(self._messages())))

    def on_answering_changed(self, answering: bool) -> None:
        if answering or self.state == "idle":
            return
        if self.running:  # the turn ended before its answer: Stop, or an error
            self.state = "stopped"
        if self._timer.isActive():
            self._elapsed = self.clock() - self._started
            self._timer.stop()
        self.show_status()

    def fold(self, answer: MessageCard) -> None:
        """Hide the cards of the research steps before `answer`, behind a button on the answer's card."""
        cards = self._view.message_cards()
        if answer not in cards:
            return
        at = cards.index(answer)
        first = max((index for index in range(at) if cards[index].role == "user"), default=-1) + 1
        steps = cards[first:at]
        if not steps:
            return
        toggle = QToolButton(answer)
        toggle.setObjectName("researchSteps")
        toggle.setCheckable(True)
        toggle.setAutoRaise(True)
        toggle.setAccessibleName("Research steps")

        def show(shown: bool) -> None:
            self._view.fold(steps, not shown)
            toggle.setText(f"{'Hide' if shown else 'Show'} the research steps ({len(steps)} cards, above this answer)")

        toggle.toggled.connect(show)
        show(False)
        answer.add_part(toggle)

    def fold_stored(self, messages: Sequence[ChatMessage]) -> None:
        """A chat shown from the history: each research answer's steps folded as they were."""
        cards = self._view.message_cards()
        if self._view.hidden_count() or len(cards) != len(messages):
            return  # not every message is a card (a chat without tools): there are no steps to fold
        for index, (card, message) in enumerate(zip(cards, messages)):
            if is_research_answer(message, since_question(messages[:index])):
                self.fold(card)

    def show_status(self) -> None:
        elapsed = self.clock() - self._started if self._timer.isActive() else self._elapsed
        turn = since_question(self._messages()) if self.state != "idle" else None
        self.status.setText(status_line(self.limits, turn, elapsed, self.state))
        self.status.setVisible(self.switch.isChecked() or self.state != "idle")
