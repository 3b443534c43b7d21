"""A settings row that names a second model file for the chosen model: its label, "Choose…" and a button that
clears the choice. The choice belongs to the model (a settings key holding model path -> file path), so
another model is never loaded with it; a chosen file that is not a GGUF is refused on the row, in red. A row
that wants a transformers folder instead (`wants_folder`) picks a folder and refuses one without config.json.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QPushButton, QWidget

from app.settings.store import Settings

GGUF_MAGIC = b"GGUF"


class ModelFileRow(QWidget):
    """The row; a subclass names its settings key, its texts and what the label says (`describe`)."""

    changed = Signal()
    KEY = ""  # the settings key: model path -> chosen file
    DIALOG_TITLE = DIALOG_FILTER = CHOOSE_TIP = CLEAR_TEXT = CLEAR_TIP = ""
    AFTER_PROBLEM = ""  # what names the choice after a refusal ("Draft model: "); "" capitalizes the label

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model_path = ""
        self.chosen: dict[str, str] = {}
        self.problem = ""  # the last chosen file that was refused, and why
        self.wants_folder = False  # a transformers model folder rather than a GGUF file
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.label = QLabel(wordWrap=True)
        self.choose_button = QPushButton("Choose…")
        self.choose_button.setToolTip(self.CHOOSE_TIP)
        self.clear_button = QPushButton(self.CLEAR_TEXT)
        self.clear_button.setToolTip(self.CLEAR_TIP)
        self.choose_button.clicked.connect(self._ask)
        self.clear_button.clicked.connect(self.clear)
        row.addWidget(self.label, 1)
        row.addWidget(self.choose_button)
        row.addWidget(self.clear_button)
        self._show()

    def load(self, settings: Settings) -> None:
        self.chosen = dict(settings.get(self.KEY))
        self._show()

    def collect(self, target: Settings) -> None:
        target.set(self.KEY, dict(self.chosen))

    def set_model(self, path: str) -> None:
        self.model_path, self.problem = path, ""
        self._show()

    def choose(self, path: str) -> bool:
        """Use `path` for this model; a file that is not a GGUF (a folder without config.json, where the row
        wants a folder) is refused on the row."""
        reason = _folder_problem(path) if self.wants_folder else _gguf_problem(path)
        self.problem = f"{Path(path).name} was not used: {reason}." if reason else ""
        if not self.problem:
            self.chosen[self.model_path] = path
            self.changed.emit()
        self._show()
        return not self.problem

    def clear(self) -> None:
        self.problem = ""
        if self.chosen.pop(self.model_path, None) is not None:
            self.changed.emit()
        self._show()

    def describe(self, chosen: str) -> tuple[str, str]:
        """The label's text and tooltip for the file chosen for this model ("" for none)."""
        raise NotImplementedError

    def _ask(self) -> None:
        start = str(Path(self.model_path).parent) if self.model_path else ""
        if self.wants_folder:
            path = QFileDialog.getExistingDirectory(self, self.DIALOG_TITLE, start)
        else:
            path, _ = QFileDialog.getOpenFileName(self, self.DIALOG_TITLE, start, self.DIALOG_FILTER)
        if path:
            self.choose(path)

    def _show(self) -> None:
        chosen = self.chosen.get(self.model_path, "")
        text, tip = self.describe(chosen)
        if self.problem:
            text = f"{self.problem} {self.AFTER_PROBLEM}{text}" if self.AFTER_PROBLEM else \
                f"{self.problem} {text[0].upper()}{text[1:]}"
        self.label.setText(text)
        self.label.setToolTip(tip)
        self.label.setStyleSheet("color: #c62828" if self.problem else "")
        self.choose_button.setEnabled(bool(self.model_path))
        self.clear_button.setEnabled(bool(chosen))


def _gguf_problem(path: str) -> str:
    """Why `path` is not a GGUF file, in words; "" where it is one."""
    try:
        with open(path, "rb") as file:
            magic = file.read(4)
    except OSError as error:
        return f"it cannot be read ({error.strerror or error})"
    return "" if magic == GGUF_MAGIC else "it is not a GGUF file"


def _folder_problem(path: str) -> str:
    """Why `path` is not a transformers model folder, in words; "" where it is one (its model is read at load)."""
    if not Path(path).is_dir():
        return "it is not a folder (a transformers model is a folder with config.json)"
    if not Path(path, "config.json").is_file():
        return "it is not a transformers model folder (no config.json)"
    return ""
