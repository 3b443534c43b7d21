"""The settings' vision projector row: the mmproj GGUF a llama.cpp model sees pictures through.

Automatic (the default) is an mmproj-*.gguf beside the model, as llama.cpp's repos ship it and Get models
fetches it; "Choose…" names one elsewhere, as llama-server's --mmproj does. The choice belongs to the model
(settings key model.projectors: model path -> projector path), so another model is never loaded with it.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QPushButton, QWidget

from app.settings.store import Settings
from engine.images import projector_beside

GGUF_MAGIC = b"GGUF"


class ProjectorRow(QWidget):
    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model_path = ""
        self.projectors: dict[str, str] = {}
        self.problem = ""  # the last chosen file that was refused, and why
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.label = QLabel(wordWrap=True)
        self.choose_button = QPushButton("Choose…")
        self.choose_button.setToolTip("A vision projector (mmproj GGUF) made for this model, as llama-server's --mmproj.")
        self.auto_button = QPushButton("Automatic")
        self.auto_button.setToolTip("Use an mmproj-*.gguf in the model's folder, if there is one.")
        self.choose_button.clicked.connect(self._ask)
        self.auto_button.clicked.connect(self.use_automatic)
        row.addWidget(self.label, 1)
        row.addWidget(self.choose_button)
        row.addWidget(self.auto_button)
        self._show()

    def load(self, settings: Settings) -> None:
        self.projectors = dict(settings.get("model.projectors"))
        self._show()

    def collect(self, target: Settings) -> None:
        target.set("model.projectors", dict(self.projectors))

    def set_model(self, path: str) -> None:
        self.model_path, self.problem = path, ""
        self._show()

    def choose(self, projector: str) -> bool:
        """Use `projector` for this model; a file that is not a GGUF is refused on the row."""
        try:
            with open(projector, "rb") as file:
                magic = file.read(4)
        except OSError as error:
            magic, reason = b"", f"it cannot be read ({error.strerror or error})"
        else:
            reason = "it is not a GGUF file"
        if magic != GGUF_MAGIC:
            self.problem = f"{Path(projector).name} was not used: {reason}."
            self._show()
            return False
        self.problem = ""
        self.projectors[self.model_path] = projector
        self._show()
        self.changed.emit()
        return True

    def use_automatic(self) -> None:
        self.problem = ""
        if self.projectors.pop(self.model_path, None) is not None:
            self.changed.emit()
        self._show()

    def _ask(self) -> None:
        start = str(Path(self.model_path).parent) if self.model_path else ""
        path, _ = QFileDialog.getOpenFileName(self, "Choose the vision projector", start,
                                              "Vision projectors (*.gguf);;All files (*)")
        if path:
            self.choose(path)

    def _show(self) -> None:
        chosen = self.projectors.get(self.model_path, "")
        if chosen:
            text, tip = Path(chosen).name, chosen
        elif (beside := projector_beside(self.model_path)):
            text, tip = f"automatic: {beside} beside the model", str(Path(self.model_path).parent / beside)
        else:
            text, tip = "none: this model reads text only", "Choose its mmproj GGUF to let it see pictures."
        if self.problem:
            text = f"{self.problem} {text[0].upper()}{text[1:]}"
        self.label.setText(text)
        self.label.setToolTip(tip)
        self.label.setStyleSheet("color: #c62828" if self.problem else "")
        self.choose_button.setEnabled(bool(self.model_path))
        self.auto_button.setEnabled(bool(chosen))
