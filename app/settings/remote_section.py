"""Settings > Backend "Remote server (OpenAI-compatible)": URL, API key, the server's model, Test connection.

The key is shown as dots and saved outside settings.json (secrets.py; the
line under it says where). Test connection asks the server's GET /v1/models
off the GUI thread and says in plain words what came back: reachable and its
models (which then fill the model list), a wrong key, not an OpenAI server,
a TLS or name error, a timeout.
"""

from __future__ import annotations

import logging
import threading

from PySide6.QtCore import QCoreApplication, QObject, Signal, Slot
from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QWidget

from app.settings.secrets import load_api_key, save_api_key, storage
from app.settings.store import Settings
from engine.remote.errors import base_url
from engine.remote.probe import ServerCheck, check_server

log = logging.getLogger(__name__)
TESTING = "Testing…"
FIRST_MODEL = "the server's first model"


class ConnectionTest(QObject):
    """One check of a server; `finished(ServerCheck)` arrives on the GUI thread."""

    finished = Signal(object)
    _done = Signal(object)

    def __init__(self, url: str, api_key: str) -> None:
        super().__init__(QCoreApplication.instance())  # outlives a dialog closed while it runs
        self._url, self._api_key = url, api_key
        self._done.connect(self._on_done)

    def start(self) -> None:
        threading.Thread(target=self._run, name="hearth-remote-check", daemon=True).start()

    def _run(self) -> None:
        try:
            result = check_server(self._url, self._api_key)
        except Exception as error:  # a bug here must not leave the dialog saying "Testing…" for ever
            log.exception("the connection test failed")
            result = ServerCheck(False, f"The test itself failed: {error}")
        self._done.emit(result)

    @Slot(object)
    def _on_done(self, result: ServerCheck) -> None:
        self.finished.emit(result)
        self.deleteLater()


class RemoteSection(QGroupBox):
    tested = Signal(object)  # ServerCheck, once shown

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Remote server (OpenAI-compatible)", parent)
        self.url_edit = QLineEdit()
        self.url_edit.setPlaceholderText("http://gpu-box:8000/v1")
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setPlaceholderText("none")
        self.storage_label = QLabel(storage().description)
        self.storage_label.setProperty("role", "hint")
        self.storage_label.setWordWrap(True)
        self.model_combo = QComboBox()
        self.model_combo.setEditable(True)  # a model the server does not list yet can be typed in
        line = self.model_combo.lineEdit()
        if line is not None:
            line.setPlaceholderText(FIRST_MODEL)
        self.test_button = QPushButton("Test connection")
        self.test_button.clicked.connect(self.test_connection)
        self.result_label = QLabel()
        self.result_label.setWordWrap(True)
        model_row = QHBoxLayout()
        model_row.addWidget(self.model_combo, 1)
        model_row.addWidget(self.test_button)
        form = QFormLayout(self)
        form.addRow("Server URL", self.url_edit)
        form.addRow("API key", self.key_edit)
        form.addRow("", self.storage_label)
        form.addRow("Model", model_row)
        form.addRow(self.result_label)
        self._saved_key = ""

    @property
    def model(self) -> str:
        return self.model_combo.currentText().strip()

    # ------------------------------------------------------------ the test

    def test_connection(self) -> None:
        self.test_button.setEnabled(False)
        self._show(TESTING, "hint")
        job = ConnectionTest(self.url_edit.text(), self.key_edit.text().strip())
        job.finished.connect(self._on_tested)
        job.start()

    def _on_tested(self, result: ServerCheck) -> None:
        self.test_button.setEnabled(True)
        self._show(result.message, "hint" if result.ok else "error")
        if result.ok:
            self._offer(result.model_ids)
        self.tested.emit(result)

    def _offer(self, models: tuple[str, ...]) -> None:
        wanted = self.model
        self.model_combo.clear()
        self.model_combo.addItems(list(models))
        self.model_combo.setEditText(wanted if wanted else (models[0] if models else ""))

    def _show(self, text: str, role: str) -> None:
        self.result_label.setText(text)
        self.result_label.setProperty("role", role)
        self.result_label.style().unpolish(self.result_label)  # the style sheet colours by role
        self.result_label.style().polish(self.result_label)

    # ------------------------------------------------------------ settings in and out

    def problem(self, remote_chosen: bool) -> str:
        if remote_chosen and not base_url(self.url_edit.text()):
            return "Enter the remote server's URL, for example http://gpu-box:8000/v1."
        return ""

    def load(self, settings: Settings) -> None:
        self.url_edit.setText(settings.get("remote.url"))
        self._saved_key = load_api_key()
        self.key_edit.setText(self._saved_key)
        model = settings.get("remote.model")
        if model:
            self.model_combo.addItem(model)
        self.model_combo.setEditText(model)

    def collect(self, target: Settings) -> None:
        target.set("remote.url", self.url_edit.text().strip())
        target.set("remote.model", self.model)

    @property
    def api_key(self) -> str:
        return self.key_edit.text().strip()

    def save_key(self) -> None:
        """Store a changed key where storage() said (never in settings.json)."""
        if self.api_key != self._saved_key:
            self.storage_label.setText(save_api_key(self.api_key).description)
            self._saved_key = self.api_key
