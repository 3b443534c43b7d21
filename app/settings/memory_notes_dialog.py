"""Settings, Memory: the notes the memory tool keeps, each shown as it is stored. The person edits one
(double-click), turns one off (its box: the model neither lists it nor gets it in a prompt) or deletes it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.history.notes import HistoryTools
from app.history.records import HistoryError

EMPTY = "No notes yet. With the memory tool on, the model saves one when you ask it to remember something."


class MemoryNotesDialog(QDialog):
    def __init__(self, notes: HistoryTools, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Memory notes")
        self.resize(560, 380)
        self.notes = notes
        self.list = QListWidget()
        self.list.itemChanged.connect(self._on_item_changed)
        self.problem = QLabel()
        self.problem.setProperty("role", "error")
        self.problem.setWordWrap(True)
        self.problem.setTextFormat(Qt.TextFormat.PlainText)
        self.problem.hide()
        self.delete_button = QPushButton("Delete")
        self.delete_button.clicked.connect(self._on_delete)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        row = QHBoxLayout()
        row.addWidget(QLabel("Ticked notes go into every chat's prompt (unless the chat turned memory off). "
                             "Double-click one to edit it."), 1)
        row.addWidget(self.delete_button)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.problem)
        layout.addWidget(buttons)
        self.refresh()

    def refresh(self) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        try:
            kept = self.notes.notes()
        except HistoryError as error:
            kept = []
            self._say(str(error))
        for note in kept:
            item = QListWidgetItem(note.text)
            item.setData(Qt.ItemDataRole.UserRole, note.id)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEditable)
            item.setCheckState(Qt.CheckState.Checked if note.enabled else Qt.CheckState.Unchecked)
            self.list.addItem(item)
        if not kept and not self.problem.text():
            self.list.addItem(QListWidgetItem(EMPTY))
        self.delete_button.setEnabled(bool(kept))
        self.list.blockSignals(False)

    def _on_item_changed(self, item: QListWidgetItem) -> None:
        note_id = item.data(Qt.ItemDataRole.UserRole)
        text = item.text().strip()
        try:
            if text:
                self.notes.update(note_id, text=text)
            self.notes.update(note_id, enabled=item.checkState() == Qt.CheckState.Checked)
        except HistoryError as error:
            self._say(str(error))
        self.refresh()

    def _on_delete(self) -> None:
        try:
            for item in self.list.selectedItems():
                self.notes.forget(item.data(Qt.ItemDataRole.UserRole))
        except HistoryError as error:
            self._say(str(error))
        self.refresh()

    def _say(self, message: str) -> None:
        self.problem.setText(message)
        self.problem.setVisible(bool(message))
