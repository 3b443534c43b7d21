"""The settings dialog's model column: found models, Open GGUF / Open folder / Get models, and what the chosen one is.

Models downloaded into the Hugging Face cache are listed as "Downloaded" with
their size on disk; Delete (after asking) removes one from the cache.

Describing a model reads its header (GGUF) or its config and safetensors
headers (a folder): fast enough for the GUI thread. Finding models is the
dialog's background scan; its entries arrive through `set_entries`, which keeps
the choice the user already made.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QFileDialog, QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QMessageBox, QPushButton,
                               QVBoxLayout, QWidget)

from engine.catalog.hf_cache import delete_downloaded, downloaded_models

from engine.catalog.description import ModelDescription, ModelEntry, ModelReadError
from engine.catalog.models import describe
from engine.units import format_bytes

PATH_ROLE = Qt.ItemDataRole.UserRole
SOURCE_ROLE = Qt.ItemDataRole.UserRole + 1
DOWNLOADED = "Downloaded"
ERROR_COLOR = "#c62828"


class ModelList(QWidget):
    """The list of models and the chosen one's description; `model_selected` says what is chosen now."""

    model_selected = Signal(object)  # ModelDescription, or None when nothing usable is chosen
    get_models_requested = Signal()  # Get models…: the window opens its dialog
    model_deleted = Signal(str)  # a downloaded model's path, now gone from the disk

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.description: ModelDescription | None = None
        self.list = QListWidget()
        self.list.setWordWrap(True)  # the metadata line is long; never hide it behind a scrollbar
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setAlternatingRowColors(True)
        self.list.setSpacing(2)
        self.list.currentItemChanged.connect(self._on_current_changed)
        self.hint_label = QLabel()
        self.hint_label.setProperty("role", "hint")
        self.hint_label.hide()
        self.metadata_label = QLabel()
        self.metadata_label.setWordWrap(True)
        self.metadata_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(f"color: {ERROR_COLOR}")
        self._build()

    def _build(self) -> None:
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(QLabel("Model"))
        column.addWidget(self.list, 1)
        column.addWidget(self.hint_label)
        row = QHBoxLayout()
        buttons = (("Open GGUF file...", self._on_open_gguf), ("Open Hugging Face folder...", self._on_open_folder),
                   ("Get models...", self.get_models_requested.emit))
        for text, slot in buttons:
            button = QPushButton(text)
            button.clicked.connect(slot)
            row.addWidget(button)
        self.delete_button = QPushButton("Delete...")
        self.delete_button.setToolTip("Delete the chosen downloaded model from the Hugging Face cache")
        self.delete_button.clicked.connect(self._on_delete)
        self.delete_button.setEnabled(False)
        row.addWidget(self.delete_button)
        column.addLayout(row)
        column.addWidget(self.metadata_label)
        column.addWidget(self.error_label)

    # ------------------------------------------------------------ entries

    def set_entries(self, entries: Sequence[ModelEntry]) -> None:
        """Show these entries in their order, then any model opened by hand; the choice stays as it was."""
        chosen = self.description.path if self.description is not None else None
        opened = [self.list.item(row) for row in range(self.list.count())]
        kept = [(item.data(PATH_ROLE), item.text(), bool(item.flags() & Qt.ItemFlag.ItemIsEnabled),
                 item.data(SOURCE_ROLE)) for item in opened]
        self.list.blockSignals(True)  # the same model stays chosen: nothing to tell
        try:
            self.list.clear()
            for entry in entries:
                self._add_entry(entry)
            paths = {entry.path for entry in entries}
            for path, text, enabled, source in kept:
                if path not in paths and source != DOWNLOADED:  # a download deleted meanwhile stays gone
                    self._add_item(path, text, enabled, source)
            for row in range(self.list.count()):
                if self.list.item(row).data(PATH_ROLE) == chosen:
                    self.list.setCurrentRow(row)
        finally:
            self.list.blockSignals(False)
        if chosen is None and self.list.count():
            self.list.setCurrentRow(0)

    def _add_entry(self, entry: ModelEntry) -> QListWidgetItem:
        if entry.description is not None:
            text = f"{entry.description.name}  ({entry.source})\n{entry.description.summary()}"
        else:
            text = f"{os.path.basename(entry.path)}  ({entry.source})\n{entry.error}"
        return self._add_item(entry.path, text, entry.description is not None, entry.source)

    def _add_item(self, path: str, text: str, enabled: bool, source: str = "") -> QListWidgetItem:
        item = QListWidgetItem(text)
        item.setData(PATH_ROLE, path)
        item.setData(SOURCE_ROLE, source)
        item.setToolTip(path)
        if not enabled:  # listed with the reason it cannot be used, but not choosable
            item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled)
        self.list.addItem(item)
        return item

    def set_hint(self, text: str) -> None:
        """A line under the list ("Looking for models…", a failed scan); "" hides it."""
        self.hint_label.setText(text)
        self.hint_label.setVisible(bool(text))

    def texts(self) -> list[str]:
        return [self.list.item(row).text() for row in range(self.list.count())]

    # ------------------------------------------------------------ choosing

    def open_model(self, path: str) -> bool:
        """Describe and choose a GGUF file or HF folder; on failure say why under the list."""
        try:
            description = describe(path)
        except ModelReadError as error:
            self.error_label.setText(str(error))
            return False
        for row in range(self.list.count()):
            if self.list.item(row).data(PATH_ROLE) == description.path:
                self.list.setCurrentRow(row)
                return True
        self.list.setCurrentItem(self._add_entry(ModelEntry(description.path, "Opened", description)))
        return True

    def _on_open_gguf(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open GGUF file", "", "GGUF models (*.gguf);;All files (*)")
        if path:
            self.open_model(path)

    def _on_open_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open Hugging Face model folder")
        if path:
            self.open_model(path)

    def _on_delete(self) -> None:
        item = self.list.currentItem()
        path = item.data(PATH_ROLE) if item is not None else None
        model = next((m for m in downloaded_models() if m.path == path), None)
        if item is None or model is None:
            return
        answer = QMessageBox.question(
            self, "Delete model", f"Delete {model.label} ({format_bytes(model.size_bytes)}) from the Hugging Face "
            f"cache?\n\n{model.path}\n\nOther programs that use this model would download it again.")
        if answer != QMessageBox.StandardButton.Yes:
            return
        freed = delete_downloaded(model)
        self.list.takeItem(self.list.row(item))
        self.metadata_label.setText(f"Deleted {model.label}: {format_bytes(freed)} freed.")
        self.model_deleted.emit(model.path)

    def _on_current_changed(self, item: QListWidgetItem | None) -> None:
        self.error_label.clear()
        self.delete_button.setEnabled(item is not None and item.data(SOURCE_ROLE) == DOWNLOADED)
        try:
            self.description = describe(item.data(PATH_ROLE)) if item is not None else None
        except ModelReadError as error:
            self.description = None
            self.error_label.setText(str(error))
        model = self.description
        if model is None:
            self.metadata_label.clear()
        else:
            self.metadata_label.setText(
                f"<b>{model.name}</b><br>{model.architecture}, {model.n_params:,} parameters<br>"
                f"{'File type' if model.kind == 'gguf' else 'Weights'}: {model.quantization}, "
                f"{format_bytes(model.file_bytes)} on disk<br>Trained context: {model.trained_context_length:,} tokens<br>"
                f"{model.layers} layers, {model.kv_heads} KV heads x {model.head_dim}")
        self.model_selected.emit(model)
