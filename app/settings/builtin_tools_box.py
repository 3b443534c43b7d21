"""The Tools window's built-in tools: each on or off (all off at first), the two that reach the internet
labelled so, where web search asks, whether fetch_page may reach the person's own network, and the way
to the memory notes. Changes are saved at once, as the rest of the Tools window saves them.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QGridLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from app.tools.builtin import BuiltinTools
from engine.tools.builtin.base import BuiltinTool

INTERNET = "reaches the internet"
DOES = {
    "web_search": "Searches the web (ddgs, or your SearXNG below); the query leaves this computer.",
    "fetch_page": "Reads one web page the model names; public addresses only unless allowed below.",
    "search_chats": "Searches your own saved chats; nothing leaves this computer.",
    "memory": "Notes the model keeps across chats, added to every chat's prompt unless its switch is off.",
}


class BuiltinToolsBox(QGroupBox):
    notes_requested = Signal()  # "Memory notes…": the window opens the notes

    def __init__(self, builtin: BuiltinTools, parent: QWidget | None = None) -> None:
        super().__init__("Built-in tools (each call still asks you, unless always allowed)", parent)
        self.builtin = builtin
        self.checks: dict[str, QCheckBox] = {}
        grid = QGridLayout(self)
        for row, tool in enumerate(builtin.all()):
            self.checks[tool.name] = self._tool_check(tool)
            grid.addWidget(self.checks[tool.name], row, 0, 1, 2)
        self.notes_button = QPushButton("Memory notes…")
        self.notes_button.setToolTip("See, edit, turn off or delete the notes the memory tool keeps")
        self.notes_button.clicked.connect(self.notes_requested.emit)
        grid.addWidget(self.notes_button, len(self.checks) - 1, 2)
        self.searxng = QLineEdit(builtin.settings.get("tools.searxng_url"))
        self.searxng.setPlaceholderText("empty: ddgs (no account); or your SearXNG, e.g. http://localhost:8888/")
        self.searxng.editingFinished.connect(self._on_searxng_edited)
        self.allow_private = QCheckBox("fetch_page may reach private addresses (your own network, this computer)")
        self.allow_private.setChecked(builtin.settings.get("tools.web_allow_private"))
        self.allow_private.toggled.connect(self._on_allow_private)
        self.allowed_hosts = QLineEdit(", ".join(builtin.settings.get("tools.web_allowed_hosts")))
        self.allowed_hosts.setPlaceholderText("or only these: nas.local, 192.168.1.20 (comma-separated)")
        self.allowed_hosts.setToolTip("Hosts fetch_page may reach even where their address is private")
        self.allowed_hosts.editingFinished.connect(self._on_allowed_hosts_edited)
        self.allowed_hosts.setEnabled(not self.allow_private.isChecked())
        row = len(self.checks)
        search_label = QLabel("Web search via")
        search_label.setTextFormat(Qt.TextFormat.PlainText)
        grid.addWidget(search_label, row, 0)
        grid.addWidget(self.searxng, row, 1, 1, 2)
        grid.addWidget(self.allow_private, row + 1, 0, 1, 3)
        grid.addWidget(self.allowed_hosts, row + 2, 0, 1, 3)
        grid.setColumnStretch(1, 1)

    def _tool_check(self, tool: BuiltinTool) -> QCheckBox:
        check = QCheckBox(f"{tool.label} ({tool.name})" + (f"  ·  {INTERNET}" if tool.reaches_internet else ""))
        check.setChecked(self.builtin.is_enabled(tool.name))
        check.setToolTip(DOES.get(tool.name, tool.spec.description))
        check.toggled.connect(lambda on, name=tool.name: self.builtin.set_enabled(name, on))
        return check

    def _on_searxng_edited(self) -> None:
        url = self.searxng.text().strip()
        valid = not url or url.startswith(("http://", "https://"))
        self.searxng.setToolTip("" if valid else "A SearXNG address starts with http:// or https://; not saved.")
        self.searxng.setProperty("error", not valid)
        self.searxng.style().polish(self.searxng)
        if valid:
            self._save("tools.searxng_url", url)

    def _on_allow_private(self, on: bool) -> None:
        self._save("tools.web_allow_private", on)
        self.allowed_hosts.setEnabled(not on)  # everything is allowed: a list would change nothing

    def _on_allowed_hosts_edited(self) -> None:
        hosts = [host.strip() for host in self.allowed_hosts.text().replace(" ", ",").split(",") if host.strip()]
        self._save("tools.web_allowed_hosts", hosts)

    def _save(self, key: str, value: object) -> None:
        self.builtin.settings.set(key, value)
        self.builtin.settings.save()
