"""The settings dialog's Tools section: the limits of tool calls, and the way to the tools, servers and memory.

A call's timeout (60 s by default), how much of a result the model is given (16,000 characters), and how
many rounds of calls one answer may make (8). "Tools, servers and memory…" opens the Tools window (the
built-in tools and the memory notes, servers and tools on/off, the tools always allowed, Import…, Edit
mcp.json), which saves its changes at once.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QGridLayout,
    QGroupBox,
    QLabel,
    QPushButton,
    QSpinBox,
    QWidget,
)

from app.settings.store import Settings


class ToolsSection(QGroupBox):
    tools_requested = Signal()  # "Tools, servers and memory…": the window opens the Tools window

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Tools (built-in and MCP)", parent)
        self.timeout_spin = QDoubleSpinBox()
        self.timeout_spin.setRange(1, 3600)
        self.timeout_spin.setDecimals(0)
        self.timeout_spin.setSuffix(" s")
        self.timeout_spin.setToolTip("A tool call that takes longer is cut off, with a note to the model and to you")
        self.result_limit_spin = QSpinBox()
        self.result_limit_spin.setRange(500, 10_000_000)
        self.result_limit_spin.setSingleStep(1000)
        self.result_limit_spin.setGroupSeparatorShown(True)
        self.result_limit_spin.setSuffix(" characters")
        self.result_limit_spin.setToolTip("A longer result is cut, with a note to the model and to you")
        self.max_rounds_spin = QSpinBox()
        self.max_rounds_spin.setRange(1, 100)
        self.max_rounds_spin.setToolTip("Rounds of tool calls one answer may make before the model must answer")
        self.servers_button = QPushButton("Tools, servers and memory…")
        self.servers_button.setToolTip("Hearth's built-in tools (web search, pages, your chats, memory) and the "
                                       "memory notes; the MCP servers of mcp.json and their tools, each on or off; "
                                       "and the tools that run without asking")
        self.servers_button.clicked.connect(self.tools_requested.emit)
        grid = QGridLayout(self)  # two rows: the dialog is tall already
        for row, column, label, widget in ((0, 0, "Call timeout", self.timeout_spin),
                                           (0, 2, "Rounds per answer", self.max_rounds_spin),
                                           (1, 0, "Result limit", self.result_limit_spin)):
            grid.addWidget(QLabel(label), row, column)
            grid.addWidget(widget, row, column + 1)
        grid.addWidget(self.servers_button, 1, 2, 1, 2)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)

    def load(self, settings: Settings) -> None:
        self.timeout_spin.setValue(settings.get("tools.timeout_s"))
        self.result_limit_spin.setValue(settings.get("tools.result_limit"))
        self.max_rounds_spin.setValue(settings.get("tools.max_rounds"))

    def collect(self, target: Settings) -> None:
        target.set("tools.timeout_s", float(self.timeout_spin.value()))
        target.set("tools.result_limit", self.result_limit_spin.value())
        target.set("tools.max_rounds", self.max_rounds_spin.value())
