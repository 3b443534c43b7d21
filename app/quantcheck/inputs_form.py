"""What both models are asked: the built-in text and questions or the user's files, and how much of them."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QComboBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel, QSpinBox, QWidget

from engine.quantcheck.inputs import Question, builtin_questions, builtin_text, read_questions, read_text


class InputsForm(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.text_source = _source_combo("Built-in: 4,000 tokens of public-domain English")
        self.question_source = _source_combo("Built-in: 30 questions (facts, arithmetic, reasoning, instructions, 5 JSON)")
        self.chunks = _limit_spin(1000)
        self.question_limit = _limit_spin(50)
        limits = QHBoxLayout()
        for label, spin in (("Text chunks of 512 tokens:", self.chunks), ("Questions:", self.question_limit)):
            limits.addWidget(QLabel(label))
            limits.addWidget(spin)
        limits.addStretch(1)
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Reference text:", self.text_source)
        form.addRow("Questions:", self.question_source)
        form.addRow("A quicker check:", limits)
        self.text_source.activated.connect(lambda index: self._on_source_chosen(self.text_source, index))
        self.question_source.activated.connect(lambda index: self._on_source_chosen(self.question_source, index))

    def text(self) -> str:
        """Raises InputError (a CheckError) when the chosen file cannot be used."""
        path = self.text_source.currentData()
        return read_text(path) if path else builtin_text()

    def questions(self) -> tuple[Question, ...]:
        path, limit = self.question_source.currentData(), self.question_limit.value() or None
        questions = read_questions(path, check_count=limit is None) if path else builtin_questions()
        return questions[:limit] if limit else questions

    def chunk_limit(self) -> int | None:
        return self.chunks.value() or None

    def _on_source_chosen(self, combo: QComboBox, index: int) -> None:
        if index != 1:
            return
        title = "Reference text (UTF-8)" if combo is self.text_source else "Questions: one a line, or JSON Lines"
        path, _ = QFileDialog.getOpenFileName(self, title, "", "Text (*.txt *.jsonl *.md);;All files (*)")
        set_source(combo, path)


def set_source(combo: QComboBox, path: str) -> None:
    """Use the file at `path`; an empty path goes back to the built-in choice."""
    while combo.count() > 2:
        combo.removeItem(2)
    if not path:
        combo.setCurrentIndex(0)
        return
    combo.addItem(Path(path).name, path)
    combo.setCurrentIndex(2)


def _source_combo(built_in: str) -> QComboBox:
    combo = QComboBox()
    combo.addItem(built_in, "")
    combo.addItem("From a file…", "")
    return combo


def _limit_spin(most: int) -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(0, most)
    spin.setSpecialValueText("all")
    return spin
