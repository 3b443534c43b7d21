"""The cards of a tool call: the call with its approval buttons, and the result, folded.

A ToolCallCard sits inside the answer that made the call: the tool, its server, and exactly the
arguments that will be sent (formatted JSON), with Allow once / Always allow this tool / Deny
while it waits; then what became of it. A call made after the model read untrusted content (a
fetched page, search results) names that content. A ToolResultCard is the tool message's own card in the
list: its first lines, "Show all" for the rest. Both show plain text only: a result is data,
nothing in it is a link or a button. A result framed as untrusted (a page, a search, an MCP server's
answer) shows its words, with a line naming what the model was told they are.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.chat.message_list import MessageCard
from engine.protocol import ToolCall
from engine.tools.builtin.base import framed_text, untrusted_source

PREVIEW_LINES = 4
PREVIEW_CHARS = 400
STATES = {
    "waiting": "Waiting for your approval: nothing runs until you allow it.",
    "running": "Running…",
    "done": "Done.",
    "error": "The tool reported an error.",
    "declined": "Declined: it did not run.",
    "stopped": "Stopped.",
    "interrupted": "Interrupted: Hearth closed before it finished. It was not run again.",
    "unknown": "The model asked for a tool that is not offered; it did not run.",
}
ALWAYS = "always allowed"  # said with the state of a call that ran because its tool is always allowed


def formatted_arguments(arguments: str) -> str:
    """The arguments as indented JSON; text that is not JSON is shown as it came."""
    try:
        return json.dumps(json.loads(arguments or "{}"), indent=2, ensure_ascii=False)
    except json.JSONDecodeError:
        return arguments


def folded_preview(text: str) -> tuple[str, bool]:
    """The first lines of a result, and whether there is more. More lines: the cut is at a line's end and
    "…" stands on a line of its own; a line longer than PREVIEW_CHARS is cut at a word, "…" after it
    (never glued to a full stop: "Sunday. …")."""
    full = text.rstrip()
    lines = full.splitlines() or [""]
    preview = "\n".join(lines[:PREVIEW_LINES]).rstrip()
    if len(preview) > PREVIEW_CHARS:
        cut = preview[:PREVIEW_CHARS]
        space = max(cut.rfind(" "), cut.rfind("\n"))
        preview = (cut[:space] if space > PREVIEW_CHARS // 2 else cut).rstrip()
        return preview + (" …" if preview.endswith(tuple(".!?:;,")) else "…"), True
    if preview != full:
        return preview + "\n…", True
    return preview, False


def call_labels(calls: Sequence[ToolCall]) -> dict[str, str]:
    """Call id -> which call it is, for the calls of one answer that share their tool's name (others get none):
    "call 1 of 2: a=2, b=3", the same on the call's card and on its result's."""
    counts = Counter(call.name for call in calls)
    seen: Counter[str] = Counter()
    labels = {}
    for call in calls:
        if counts[call.name] > 1:
            seen[call.name] += 1
            summary = _argument_summary(call.arguments)
            labels[call.id] = f"call {seen[call.name]} of {counts[call.name]}" + (f": {summary}" if summary else "")
    return labels


def _argument_summary(arguments: str, limit: int = 40) -> str:
    """The first argument values on one line ("a=2, b=3"), cut at `limit` characters; "" if not a JSON object."""
    try:
        values = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return ""
    if not isinstance(values, dict):
        return ""
    text = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in values.items())
    return text if len(text) <= limit else text[:limit - 1].rstrip(", ") + "…"


def _plain_label(text: str, name: str) -> QLabel:
    label = QLabel(text)
    label.setObjectName(name)
    label.setTextFormat(Qt.TextFormat.PlainText)  # a result or an argument is never markup
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class ToolCallCard(QFrame):
    """One call of an answer: what will run, and the person's decision."""

    decided = Signal(str)  # "once", "always" or "deny"

    def __init__(self, name: str, server: str, arguments: str, label: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("toolCallCard")
        self.name, self.server, self.state = name, server, ""
        self.always = False  # it ran (or runs) because the tool is always allowed: the status keeps saying so
        where = f"  ·  server {server}" if server else ""
        which = f" ({label})" if label else ""  # which of the answer's calls of this tool (call_labels)
        self.title = QLabel(f"Tool call: {name}{which}{where}")
        self.title.setObjectName("toolCallTitle")
        self.title.setTextFormat(Qt.TextFormat.PlainText)
        self.arguments = _plain_label(formatted_arguments(arguments), "toolArguments")
        self.arguments.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.status = _plain_label("", "toolStatus")
        self.status.setProperty("role", "hint")
        self.provenance = _plain_label("", "toolProvenance")  # the pages read before it: a call they may have asked for
        self.provenance.setProperty("role", "error")  # a message the person must notice before allowing
        self.provenance.hide()
        self.allow_button = self._button("Allow once", "Run this call once, with exactly these arguments", "once")
        self.always_button = self._button("Always allow this tool", f"Run {name} without asking from now on "
                                          "(revoke it in Settings, Tools)", "always")
        self.deny_button = self._button("Deny", "Do not run it; the model is told you declined", "deny")
        self._build()

    def _button(self, text: str, tip: str, choice: str) -> QPushButton:
        button = QPushButton(text)
        button.setToolTip(tip)
        button.clicked.connect(lambda: self.decided.emit(choice))
        return button

    def _build(self) -> None:
        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        for button in (self.allow_button, self.always_button, self.deny_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(4)
        layout.addWidget(self.title)
        layout.addWidget(self.provenance)
        layout.addWidget(self.arguments)
        layout.addLayout(buttons)
        layout.addWidget(self.status)

    @property
    def waiting(self) -> bool:
        return self.state == "waiting"

    def set_sources(self, sources: Sequence[str]) -> None:
        """The untrusted content the model read before this call (pages, search results): the call may be theirs."""
        shown = ", ".join(sources[-3:]) + (f" and {len(sources) - 3} more" if len(sources) > 3 else "")
        self.provenance.setText(f"Follows content from {shown}. Text from the web can ask for calls, so this one "
                                "waits for you even if the tool is always allowed.")
        self.provenance.setVisible(bool(sources))

    def set_state(self, state: str, detail: str = "") -> None:
        """One of STATES; the buttons show only while it waits for the person."""
        self.state = state
        for button in (self.allow_button, self.always_button, self.deny_button):
            button.setVisible(state == "waiting")
        head = STATES[state]
        if self.always and state in ("running", "done", "error", "stopped"):
            head = f"{head.rstrip('.')} · {ALWAYS}."
        self.status.setText(" ".join(part for part in (head, detail) if part))
        self.setProperty("state", state)
        self.style().unpolish(self)
        self.style().polish(self)


class ToolResultCard(MessageCard):
    """A tool message: the result folded to its first lines, "Show all" for the rest."""

    def __init__(self, name: str, text: str, is_error: bool = False, label: str = "",
                 parent: QWidget | None = None) -> None:
        self._full = text
        super().__init__("tool", "", parent)
        which = f" ({label})" if label else ""  # the same as on its call's card
        self.title.setText(f"Tool result: {name}{which}" + (" (error)" if is_error else ""))
        self.setProperty("error", is_error)
        self.browser.hide()  # a result is plain text, never rendered Markdown
        source = untrusted_source(text)
        self.framing = _plain_label(f"Given to the model as untrusted data from {source}." if source else "",
                                    "toolFraming")
        self.framing.setProperty("role", "hint")
        self.framing.setVisible(bool(source))
        self.result = _plain_label("", "toolResult")
        self.result.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.show_all = QToolButton()
        self.show_all.setObjectName("toolShowAll")
        self.show_all.setAutoRaise(True)
        self.show_all.setCheckable(True)
        self.show_all.toggled.connect(self._show)
        layout = self.layout()
        assert isinstance(layout, QVBoxLayout)
        layout.insertWidget(layout.indexOf(self.browser), self.framing)
        layout.insertWidget(layout.indexOf(self.browser), self.result)
        layout.insertWidget(layout.indexOf(self.browser), self.show_all)
        self._show(False)

    @property
    def folded(self) -> bool:
        return not self.show_all.isChecked()

    def text(self) -> str:
        return self._full

    def set_text(self, text: str) -> None:
        if text or not hasattr(self, "result"):  # MessageCard's constructor sets "" before the result exists
            self._full = text or self._full
        if hasattr(self, "result"):
            self._show(self.show_all.isChecked())

    def _show(self, everything: bool) -> None:
        words = framed_text(self._full)  # the frame is said once, above (self.framing)
        preview, longer = folded_preview(words)
        self.result.setText(words if everything else preview)
        self.show_all.setVisible(longer)
        self.show_all.setText("Show less" if everything else f"Show all ({len(words):,} characters)")
