"""Settings, Tools: Hearth's built-in tools on/off (app/settings/builtin_tools_box.py), the MCP servers of
mcp.json, each on/off with its command line, their tools on/off, the tools always allowed (revocable),
Import… another app's mcp.json, and Edit mcp.json.

A server is listed with exactly what will run on this computer, with the user's rights. Its tools
show once it has been started (here with "List tools", or by a chat that needs them); a server that
fails says why. Changes are saved to the settings at once. Values of env or headers that look like
secrets and are written in plain text are pointed out, with "Keep secrets in the keyring" to move them
(mcp.json then names each as `${keyring:NAME}`).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.settings.builtin_tools_box import BuiltinToolsBox
from app.settings.memory_notes_dialog import MemoryNotesDialog
from app.tools.service import ToolService, tool_key
from engine.tools.config import McpConfigError, merge_text, read_text
from engine.tools.manager import ServerTools
from engine.tools.secrets import plain_secrets

SERVER_TIP = "What will run on this computer, with your rights, when a chat first needs its tools"


class ToolsDialog(QDialog):
    """The Tools section: servers and tools on/off, always-allowed tools, Import and Edit."""

    def __init__(self, service: ToolService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Tools")
        self.resize(720, 640)
        self.service = service
        self.problem = QLabel()
        self.problem.setProperty("role", "error")
        self.problem.setWordWrap(True)
        self.problem.setTextFormat(Qt.TextFormat.PlainText)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Server / tool", "Runs / does"])
        self.tree.itemChanged.connect(self._on_item_changed)
        self.allowed = QListWidget()
        self.revoke_button = QPushButton("Revoke")
        self.revoke_button.clicked.connect(self._on_revoke)
        self.import_button = QPushButton("Import…")
        self.import_button.clicked.connect(self._on_import)
        self.edit_button = QPushButton("Edit mcp.json")
        self.edit_button.clicked.connect(self._on_edit)
        self.list_button = QPushButton("List tools")
        self.list_button.setToolTip("Start the servers that are on and show their tools")
        self.list_button.clicked.connect(self._on_list)
        self.secrets_note = QLabel()
        self.secrets_note.setWordWrap(True)
        self.secrets_note.setTextFormat(Qt.TextFormat.PlainText)
        self.secrets_button = QPushButton("Keep secrets in the keyring")
        self.secrets_button.setToolTip("Store these values in the system keyring (or a file only you can read) "
                                       "and leave a ${keyring:NAME} reference in mcp.json")
        self.secrets_button.clicked.connect(self._on_keep_secrets)
        self._build()
        service.tools_listed.connect(self._on_listed)
        self.refresh()

    def _build(self) -> None:
        self.builtin = BuiltinToolsBox(self.service.builtin)
        self.builtin.notes_requested.connect(self._on_notes)
        row = QHBoxLayout()
        for button in (self.import_button, self.edit_button, self.list_button):
            row.addWidget(button)
        row.addStretch(1)
        secrets_row = QHBoxLayout()
        secrets_row.addWidget(self.secrets_note, 1)
        secrets_row.addWidget(self.secrets_button)
        allowed_row = QHBoxLayout()
        allowed_row.addWidget(self.allowed, 1)
        allowed_row.addWidget(self.revoke_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.builtin)
        layout.addWidget(QLabel(f"MCP servers from {self.service.path}:"))
        layout.addWidget(self.problem)
        layout.addWidget(self.tree, 3)
        layout.addLayout(row)
        layout.addLayout(secrets_row)
        layout.addWidget(QLabel("Always allowed (these run without asking):"))
        layout.addLayout(allowed_row, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def refresh(self) -> None:
        self.problem.setText(self.service.config_error)
        self.problem.setVisible(bool(self.service.config_error))
        self.tree.blockSignals(True)
        self.tree.clear()
        disabled = set(self.service.settings.get("tools.disabled_servers"))
        for server in self.service.servers:
            item = QTreeWidgetItem([server.name, server.command_line()])
            item.setToolTip(1, SERVER_TIP)
            item.setData(0, Qt.ItemDataRole.UserRole, ("server", server.name))
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(0, Qt.CheckState.Unchecked if server.name in disabled else Qt.CheckState.Checked)
            self.tree.addTopLevelItem(item)
            self._add_tools(item, self.service.listed.get(server.name))
        self.tree.expandAll()
        self.tree.resizeColumnToContents(0)
        self.tree.blockSignals(False)
        self.allowed.clear()
        for key in self.service.settings.get("tools.always_allow"):
            self.allowed.addItem(QListWidgetItem(key))
        self._show_plain_secrets()

    def _show_plain_secrets(self, done: str = "") -> None:
        plain = plain_secrets(self.service.servers)
        self.secrets_button.setVisible(bool(plain))
        if plain and not done:
            where = ", ".join(f"{key} of {server}" for server, key in plain)
            done = f"Written in plain text in mcp.json, and they look like secrets: {where}."
        self.secrets_note.setText(done)
        self.secrets_note.setVisible(bool(done))

    def _add_tools(self, item: QTreeWidgetItem, listed: ServerTools | None) -> None:
        server = item.text(0)
        if listed is None:
            item.addChild(QTreeWidgetItem(["", "(tools show once the server has started)"]))
            return
        if listed.error:
            child = QTreeWidgetItem(["failed", listed.error])
            child.setToolTip(1, listed.error)
            item.addChild(child)
        for spec in listed.tools:
            child = QTreeWidgetItem([spec.name, spec.description])
            child.setData(0, Qt.ItemDataRole.UserRole, ("tool", tool_key(server, spec.name)))
            child.setFlags(child.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            enabled = self.service.tool_enabled(server, spec.name)
            child.setCheckState(0, Qt.CheckState.Checked if enabled else Qt.CheckState.Unchecked)
            item.addChild(child)

    def _on_item_changed(self, item: QTreeWidgetItem, _column: int) -> None:
        data = item.data(0, Qt.ItemDataRole.UserRole)
        if not data:
            return
        kind, key = data
        setting = "tools.disabled_servers" if kind == "server" else "tools.disabled_tools"
        values = [value for value in self.service.settings.get(setting) if value != key]
        if item.checkState(0) != Qt.CheckState.Checked:
            values.append(key)
        self.service.settings.set(setting, values)
        self.service.settings.save()

    def _on_keep_secrets(self) -> None:
        said = self.service.keep_secrets_in_keyring()
        self.refresh()
        self._show_plain_secrets(said)

    def _on_revoke(self) -> None:
        for item in self.allowed.selectedItems():
            self.service.revoke(item.text())
        self.refresh()

    def import_file(self, path: str) -> None:
        """Add another app's servers (Claude Desktop's claude_desktop_config.json...) to Hearth's mcp.json."""
        target = Path(self.service.path)
        try:
            imported = read_text(Path(path))
            current = read_text(target)
        except McpConfigError as error:
            self.problem.setText(str(error))
            self.problem.show()
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(merge_text(current, imported or '{"mcpServers": {}}'), encoding="utf-8")
        self.service.reload()
        self.refresh()

    def _on_import(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import MCP servers", str(Path.home()), "JSON (*.json)")
        if path:
            self.import_file(path)

    def _on_edit(self) -> None:
        target = Path(self.service.path)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text('{\n  "mcpServers": {\n  }\n}\n', encoding="utf-8")
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(target)))

    def _on_list(self) -> None:
        self.service.reload()
        for server in self.service.enabled_servers():
            self.service.list_server(server.name)
        self.refresh()

    def _on_notes(self) -> None:
        MemoryNotesDialog(self.service.builtin.history, self).exec()

    def _on_listed(self, _tools: ServerTools) -> None:
        self.refresh()
