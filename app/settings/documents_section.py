"""The settings dialog's Documents section: whether attached files are searched by meaning as well as words.

Off: BM25 over the chunks' words, no model needed. With an embedding model, each chunk also gets a
vector and a question's best chunks are the fusion of both rankings (reciprocal rank): a GGUF
embedding model (nomic-embed-text, bge… any GGUF llama.cpp can embed with), or the chat's own model.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QGridLayout, QGroupBox, QLabel, QLineEdit, QPushButton, QWidget

from app.settings.store import Settings
from app.settings.widgets import combo, select

MODES = [("by words (no model)", "off"), ("by words and meaning: a GGUF embedding model", "gguf"),
         ("by words and meaning: the chat's model", "chat_model")]


class DocumentsSection(QGroupBox):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Documents", parent)
        self.mode_combo = combo(MODES)
        self.mode_combo.setToolTip("How an attached file too long to go in whole is searched for each question")
        self.model_edit = QLineEdit()
        self.model_edit.setPlaceholderText("the embedding model's .gguf file")
        self.browse_button = QPushButton("Choose…")
        self.browse_button.clicked.connect(self._browse)
        self.problem_label = QLabel(wordWrap=True)
        self.problem_label.setStyleSheet("color: #c62828")
        grid = QGridLayout(self)
        grid.addWidget(QLabel("Search files"), 0, 0)
        grid.addWidget(self.mode_combo, 0, 1, 1, 2)
        grid.addWidget(self.model_edit, 1, 1)
        grid.addWidget(self.browse_button, 1, 2)
        grid.addWidget(self.problem_label, 2, 0, 1, 3)
        grid.setColumnStretch(1, 1)
        self.mode_combo.currentIndexChanged.connect(self._on_mode_changed)
        self._on_mode_changed()

    def load(self, settings: Settings) -> None:
        select(self.mode_combo, settings.get("documents.embeddings"))
        self.model_edit.setText(settings.get("documents.embedding_model"))
        self._on_mode_changed()

    def collect(self, target: Settings) -> None:
        target.set("documents.embeddings", self.mode_combo.currentData())
        target.set("documents.embedding_model", self.model_edit.text().strip())

    def problem(self) -> str:
        """Why the section cannot be saved as it is ("" : it can)."""
        if self.mode_combo.currentData() != "gguf":
            return ""
        path = self.model_edit.text().strip()
        if not path:
            return "Choose the GGUF embedding model, or search files by words only."
        try:
            with open(Path(path).expanduser(), "rb") as file:
                magic = file.read(4)
        except OSError as error:
            return f"The embedding model cannot be read: {error.strerror or error} ({path})."
        return "" if magic == b"GGUF" else f"{Path(path).name} is not a GGUF file."

    def show_problem(self, problem: str) -> None:
        self.problem_label.setText(problem)
        self.problem_label.setVisible(bool(problem))

    def _on_mode_changed(self) -> None:
        gguf = self.mode_combo.currentData() == "gguf"
        self.model_edit.setVisible(gguf)
        self.browse_button.setVisible(gguf)
        self.show_problem("")

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose the embedding model", "", "GGUF models (*.gguf)")
        if path:
            self.model_edit.setText(path)
