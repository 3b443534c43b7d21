"""A repo's models as a table: file, quantization, size, memory needed (once loaded, up to every chat full),
and whether it fits here.

The recommended row is starred and bold; a verdict's colour is the settings
dialog's (fits green, tight amber, does not fit red), and its tooltip is the same
sentence the settings dialog shows, with what would make it fit.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from engine.hub.fit import Fit, RepoView
from engine.hub.listing import ModelChoice
from engine.units import format_bytes

VERDICT_COLORS = {"fits": "#2e7d32", "tight": "#b26a00", "does not fit": "#c62828"}
RECOMMENDED_BACKGROUND = QColor(46, 125, 50, 40)
COLUMNS = ("", "Model", "Quantization", "Download", "Needs", "Fits here")
KEY_ROLE = Qt.ItemDataRole.UserRole


def needs_text(fit: Fit) -> str:
    """The Needs column: "1.6 GiB, up to 1.9 GiB" (once loaded, then with every chat full; the tooltip says so)."""
    full, after_load = format_bytes(fit.need_bytes), format_bytes(fit.after_load_bytes or fit.need_bytes)
    return full if full == after_load else f"{after_load}, up to {full}"


class FilesTable(QTableWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(COLUMNS), parent)
        self.setHorizontalHeaderLabels(COLUMNS)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().hide()
        header = self.horizontalHeader()
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        for column in (0, 2, 3, 4, 5):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self._choices: dict[str, ModelChoice] = {}

    def show_answer(self, answer: RepoView) -> None:
        self.setRowCount(0)
        self._choices = {choice.key: choice for choice in answer.listing.choices}
        recommended = answer.report.recommended if answer.report else None
        for row, choice in enumerate(answer.listing.choices):
            self.insertRow(row)
            fit = answer.report.fit(choice.key) if answer.report else None
            cells = ["★" if choice == recommended else "", choice.label, answer.quantization(choice) or "?",
                     "downloaded" if choice.key in answer.local else format_bytes(choice.download_bytes),
                     needs_text(fit) if fit else "?", fit.level if fit else "?"]
            said = " ".join(part for part in (fit.message, fit.suggestion) if part) if fit else ""
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setData(KEY_ROLE, choice.key)
                item.setToolTip(f"{_projector_note(choice)}{said}" if column == 1 else said)
                self.setItem(row, column, item)
            if fit is not None:
                self.cell(row, 5).setForeground(QBrush(QColor(VERDICT_COLORS[fit.level])))
            if choice == recommended:
                self._highlight(row)
        if recommended is not None:
            self.select(recommended.key)
        elif self.rowCount():
            self.selectRow(0)

    def show_fit(self, choice: ModelChoice, fit: Fit) -> None:
        """`choice`'s row as changed (another projector picked): its download, its needs and its verdict."""
        for row in range(self.rowCount()):
            if self.cell(row, 0).data(KEY_ROLE) == choice.key:
                said = " ".join(part for part in (fit.message, fit.suggestion) if part)
                if self.cell(row, 3).text() != "downloaded":
                    self.cell(row, 3).setText(format_bytes(choice.download_bytes))
                self.cell(row, 4).setText(needs_text(fit))
                self.cell(row, 5).setText(fit.level)
                self.cell(row, 5).setForeground(QBrush(QColor(VERDICT_COLORS[fit.level])))
                self.cell(row, 1).setToolTip(f"{_projector_note(choice)}{said}")
                for column in (0, 2, 3, 4, 5):
                    self.cell(row, column).setToolTip(said)

    def _highlight(self, row: int) -> None:
        for column in range(self.columnCount()):
            item = self.cell(row, column)
            font = QFont(item.font())
            font.setBold(True)
            item.setFont(font)
            item.setBackground(RECOMMENDED_BACKGROUND)

    def cell(self, row: int, column: int) -> QTableWidgetItem:
        item = self.item(row, column)
        assert item is not None, (row, column)  # every cell is filled in show_answer
        return item

    def select(self, key: str) -> None:
        for row in range(self.rowCount()):
            if self.cell(row, 0).data(KEY_ROLE) == key:
                self.selectRow(row)
                return

    def selected_choice(self) -> ModelChoice | None:
        rows = self.selectionModel().selectedRows() if self.selectionModel() else []
        if not rows:
            return None
        return self._choices.get(self.cell(rows[0].row(), 0).data(KEY_ROLE))

    def row_texts(self) -> list[list[str]]:
        """What the table shows, row by row (for tests and the accessible description)."""
        return [[self.cell(row, column).text() for column in range(self.columnCount())]
                for row in range(self.rowCount())]


def _projector_note(choice: ModelChoice) -> str:
    """What the Model cell's tooltip says of a vision projector fetched with the model."""
    projector = choice.projector
    if projector is None:
        return ""
    return (f"Comes with its vision projector {PurePosixPath(projector.path).name} ({format_bytes(projector.size)}, "
            "counted in the download and the memory needed), so it can read pictures. ")
