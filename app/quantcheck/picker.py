"""Choosing what to compare: a reference and its candidates, from the library or from files.

The library is what the settings dialog offers (the bundled model, recent
files, the models folder where downloads go, the Hugging Face cache). A GGUF
reference is compared with other GGUF files; a model folder with itself
through bitsandbytes (int8, NF4, FP4) and with other folders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QFileDialog, QGridLayout, QHBoxLayout, QLabel, QListWidget, QListWidgetItem,
    QPushButton, QWidget,
)

from engine.catalog.models import ModelEntry, ModelReadError, describe
from engine.quantcheck.check import Backend, ModelSpec
from engine.units import format_bytes

BITSANDBYTES_MODES = (("int8", "8-bit (int8)"), ("nf4", "4-bit NF4"), ("fp4", "4-bit FP4"))
PATH_ROLE = Qt.ItemDataRole.UserRole


def entry_label(entry: ModelEntry) -> str:
    name = Path(entry.path).name
    if entry.description is None:
        return f"{name} — cannot be read ({entry.source})"
    d = entry.description
    return f"{name} — {d.quantization}, {format_bytes(d.file_bytes)} ({entry.source})"


def is_gguf(path: str) -> bool:
    return Path(path).suffix.lower() == ".gguf"


class ModelPicker(QWidget):
    changed = Signal()

    def __init__(self, library: Sequence[ModelEntry], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._library = {entry.path: entry for entry in library}
        self.reference = QComboBox()
        self.reference.setMinimumContentsLength(40)
        self.candidates = QListWidget()
        self.candidates.setMaximumHeight(96)
        self.modes = {mode: QCheckBox(label) for mode, label in BITSANDBYTES_MODES}
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        self.hint.setObjectName("hint")
        self._build()
        for entry in library:
            self._add_reference(entry.path)
        self.reference.currentIndexChanged.connect(self._on_reference_changed)
        self.candidates.itemChanged.connect(lambda _item: self.changed.emit())
        for box in self.modes.values():
            box.toggled.connect(lambda _on: self.changed.emit())
        self._on_reference_changed()

    def _build(self) -> None:
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(QLabel("Reference (full or higher precision):"), 0, 0)
        grid.addWidget(self.reference, 0, 1)
        grid.addLayout(self._buttons(self._on_reference_file, self._on_reference_folder), 0, 2)
        grid.addWidget(QLabel("Candidates (quantized):"), 1, 0, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(self.candidates, 1, 1)
        grid.addLayout(self._buttons(self._on_candidate_file, self._on_candidate_folder), 1, 2, Qt.AlignmentFlag.AlignTop)
        modes = QHBoxLayout()
        modes.addWidget(QLabel("The reference folder through bitsandbytes:"))
        for box in self.modes.values():
            modes.addWidget(box)
        modes.addStretch(1)
        grid.addLayout(modes, 2, 1)
        grid.addWidget(self.hint, 3, 1, 1, 2)
        grid.setColumnStretch(1, 1)

    def _buttons(self, on_file: object, on_folder: object) -> QHBoxLayout:
        row = QHBoxLayout()
        for text, slot in (("File…", on_file), ("Folder…", on_folder)):
            button = QPushButton(text)
            button.clicked.connect(slot)
            row.addWidget(button)
        return row

    # ------------------------------------------------------------ what was chosen

    def reference_path(self) -> str:
        return str(self.reference.currentData(PATH_ROLE) or "")

    def selection(self) -> tuple[ModelSpec, tuple[ModelSpec, ...]] | str:
        """The reference and the candidates, or a sentence saying what is missing."""
        reference = self.reference_path()
        if not reference:
            return "Choose a reference model."
        backend: Backend = "llamacpp" if is_gguf(reference) else "hf"
        chosen = [self.candidates.item(i) for i in range(self.candidates.count())]
        paths = [str(item.data(PATH_ROLE)) for item in chosen if item.checkState() == Qt.CheckState.Checked]
        candidates = [ModelSpec(p, backend) for p in paths]
        if backend == "hf":
            candidates += [ModelSpec(reference, "hf", mode) for mode, box in self.modes.items() if box.isChecked()]
        if not candidates:
            what = "a bitsandbytes mode or another folder" if backend == "hf" else "at least one other GGUF file"
            return f"Choose {what} to compare with the reference."
        return ModelSpec(reference, backend), tuple(candidates)

    # ------------------------------------------------------------ slots

    def _on_reference_changed(self) -> None:
        reference = self.reference_path()
        gguf = is_gguf(reference)
        checked = {str(self.candidates.item(i).data(PATH_ROLE)) for i in range(self.candidates.count())
                   if self.candidates.item(i).checkState() == Qt.CheckState.Checked}
        self.candidates.blockSignals(True)
        self.candidates.clear()
        for path in self._library:
            if path != reference and is_gguf(path) == gguf:
                self._add_candidate(path, path in checked)
        self.candidates.blockSignals(False)
        for box in self.modes.values():
            box.setEnabled(bool(reference) and not gguf)
        self.hint.setText(
            "Compared with other GGUF files of the same model (same tokenizer)." if gguf else
            "A model folder is compared with itself through bitsandbytes, and with other folders of the same model."
        )
        self.changed.emit()

    def _on_reference_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Reference GGUF file", "", "GGUF models (*.gguf);;All files (*)")
        if path:
            self.choose_reference(path)

    def _on_reference_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Reference Hugging Face model folder")
        if path:
            self.choose_reference(path)

    def _on_candidate_file(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Candidate GGUF files", "", "GGUF models (*.gguf);;All files (*)")
        for path in paths:
            self.add_candidate(path)

    def _on_candidate_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Candidate Hugging Face model folder")
        if path:
            self.add_candidate(path)

    # ------------------------------------------------------------ filling in

    def set_library(self, library: Sequence[ModelEntry]) -> None:
        """Models found after the dialog opened (the scan runs off the GUI thread); choices made stay."""
        reference = self.reference_path()
        for entry in library:
            self._library.setdefault(entry.path, entry)
            if self.reference.findData(entry.path, PATH_ROLE) < 0:
                self._add_reference(entry.path)
        if not reference and self.reference.count():
            self.reference.setCurrentIndex(0)
        self._on_reference_changed()

    def choose_reference(self, path: str) -> None:
        index = self.reference.findData(path, PATH_ROLE)
        if index < 0:
            self._remember(path)
            self._add_reference(path)
            index = self.reference.count() - 1
        self.reference.setCurrentIndex(index)

    def add_candidate(self, path: str, checked: bool = True) -> None:
        self._remember(path)
        for i in range(self.candidates.count()):
            if self.candidates.item(i).data(PATH_ROLE) == path:
                self.candidates.item(i).setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
                return
        self._add_candidate(path, checked)
        self.changed.emit()

    def _remember(self, path: str) -> None:
        if path not in self._library:
            try:
                entry = ModelEntry(path, "Chosen file", describe(path))
            except ModelReadError as error:
                entry = ModelEntry(path, "Chosen file", None, str(error))
            self._library[path] = entry

    def _add_reference(self, path: str) -> None:
        self.reference.addItem(entry_label(self._library[path]))
        self.reference.setItemData(self.reference.count() - 1, path, PATH_ROLE)

    def _add_candidate(self, path: str, checked: bool) -> None:
        item = QListWidgetItem(entry_label(self._library[path]))
        item.setData(PATH_ROLE, path)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
        self.candidates.addItem(item)
