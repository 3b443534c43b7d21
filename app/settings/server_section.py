"""The settings dialog's Local API section: on/off, address, port, API key, allowed web origins.

Listening on anything but this computer's own address needs an explicit choice
(the address field) and then an API key; `problem()` says what is missing, and
the dialog does not apply until it is fixed. The key is shown as dots unless
asked; Generate makes a random one. It is kept in the system keyring or a
private file (secrets.py), never in settings.json.
"""

from __future__ import annotations

import secrets

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from app.settings.secrets import LOCAL_API_KEY, load_secret, save_secret
from app.settings.store import Settings
from app.settings.widgets import spin
from engine.server.options import is_loopback

HOSTS = (("127.0.0.1 (this computer only)", "127.0.0.1"), ("0.0.0.0 (every network of this computer)", "0.0.0.0"))


class ServerSection(QGroupBox):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Local API (OpenAI-compatible)", parent)
        self.enabled_check = QCheckBox("Serve the loaded model over HTTP, batched with the chats")
        self.host_combo = QComboBox()
        self.host_combo.setEditable(True)  # another address of this computer can be typed in
        for label, value in HOSTS:
            self.host_combo.addItem(label, value)
        self.port_spin = spin(1, 65535)
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.PasswordEchoOnEdit)
        self.key_edit.setPlaceholderText("none")
        generate = QPushButton("Generate")
        generate.clicked.connect(lambda: self.key_edit.setText(secrets.token_urlsafe(24)))
        key_row = QHBoxLayout()
        key_row.addWidget(self.key_edit, 1)
        key_row.addWidget(generate)
        self.origins_edit = QLineEdit()
        self.origins_edit.setPlaceholderText("none: web pages may not call it")
        self.origins_edit.setToolTip("Comma-separated, e.g. http://localhost:3000")
        self._saved_key = ""
        self.problem_label = QLabel()
        self.problem_label.setProperty("role", "error")
        self.problem_label.setWordWrap(True)
        form = QFormLayout(self)
        form.addRow(self.enabled_check)
        form.addRow("Address", self.host_combo)
        form.addRow("Port", self.port_spin)
        form.addRow("API key", key_row)
        form.addRow("Web origins", self.origins_edit)
        form.addRow(self.problem_label)
        self.enabled_check.toggled.connect(self._on_enabled_toggled)
        self._on_enabled_toggled(False)

    @property
    def host(self) -> str:
        text = self.host_combo.currentText().strip()
        index = self.host_combo.findText(text)
        return str(self.host_combo.itemData(index)) if index >= 0 else text.split(" ", 1)[0]

    def _on_enabled_toggled(self, on: bool) -> None:
        for widget in (self.host_combo, self.port_spin, self.key_edit, self.origins_edit):
            widget.setEnabled(on)

    def load(self, settings: Settings) -> None:
        self.enabled_check.setChecked(settings.get("server.enabled"))
        host = settings.get("server.host")
        index = self.host_combo.findData(host)
        if index >= 0:
            self.host_combo.setCurrentIndex(index)
        else:
            self.host_combo.setEditText(host)
        self.port_spin.setValue(settings.get("server.port"))
        self._saved_key = load_secret(LOCAL_API_KEY)
        self.key_edit.setText(self._saved_key)
        self.origins_edit.setText(", ".join(settings.get("server.cors_origins")))

    def problem(self) -> str:
        """Why these choices cannot be applied; empty when they can."""
        if self.enabled_check.isChecked() and not is_loopback(self.host) and not self.key_edit.text().strip():
            return (f"Listening on {self.host} lets other computers use the model: set an API key "
                    "(Generate makes one), or choose 127.0.0.1.")
        return ""

    def show_problem(self, message: str) -> None:
        self.problem_label.setText(message)

    def save_key(self) -> None:
        """Store a changed key in the keyring or a private file, before the server's options are built."""
        key = self.key_edit.text().strip()
        if key != self._saved_key:
            save_secret(LOCAL_API_KEY, key)
            self._saved_key = key

    def collect(self, target: Settings) -> None:
        target.set("server.enabled", self.enabled_check.isChecked())
        target.set("server.host", self.host)
        target.set("server.port", self.port_spin.value())
        origins = [origin.strip() for origin in self.origins_edit.text().replace(" ", ",").split(",")]
        target.set("server.cors_origins", [origin for origin in origins if origin])
