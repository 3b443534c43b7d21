"""A finished check on screen: one row per candidate with its verdict, and its answers beside the reference's."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView, QHeaderView, QLabel, QSplitter, QTableWidget, QTableWidgetItem, QTextBrowser, QVBoxLayout,
    QWidget,
)

from engine.quantcheck.report import CandidateResult, Report

LEVEL_COLOURS = {"fine": "#2e7d32", "check": "#b26a00", "not good enough": "#c62828"}


class ResultsView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.report: Report | None = None
        self.heading = QLabel("No results yet: choose the models above and press Run, or open a saved check.")
        self.heading.setWordWrap(True)
        self.heading.setMinimumHeight(self.heading.fontMetrics().lineSpacing() * 2 + 4)  # the heading takes two lines
        self.table = QTableWidget(0, 0)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.table.verticalHeader().hide()
        self.answers = QTextBrowser()
        self.answers.setPlaceholderText("Select a candidate to see its answers beside the reference's.")
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(self.answers)
        split.setSizes([200, 180])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.heading)
        layout.addWidget(split, 1)
        self.table.itemSelectionChanged.connect(self._on_selection_changed)

    def show_report(self, report: Report) -> None:
        self.report = report
        self.heading.setText(report.heading())
        rows = report.rows()
        self.table.clear()
        self.table.setColumnCount(len(rows[0]))
        self.table.setHorizontalHeaderLabels(rows[0])
        self.table.setRowCount(len(rows) - 1)
        for row, (cells, candidate) in enumerate(zip(rows[1:], report.candidates)):
            for column, text in enumerate(cells):
                verdict = column == len(cells) - 1
                item = QTableWidgetItem(short_verdict(text) if verdict else text)
                item.setToolTip(text)
                if verdict:
                    item.setForeground(QBrush(QColor(LEVEL_COLOURS[candidate.verdict.level])))
                self.table.setItem(row, column, item)
        header = self.table.horizontalHeader()
        header.setMaximumSectionSize(260)  # a long file name is elided in the middle; its tooltip has it all
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(len(rows[0]) - 1, QHeaderView.ResizeMode.Stretch)
        self.table.resizeRowsToContents()
        if report.candidates:
            self.table.selectRow(0)

    def _on_selection_changed(self) -> None:
        rows = {index.row() for index in self.table.selectedIndexes()}
        if self.report is None or not rows:
            self.answers.clear()
            return
        self.answers.setHtml(answers_html(self.report.candidates[min(rows)]))


def short_verdict(text: str) -> str:
    """The level and the finding that decided it; the whole verdict is the tooltip and heads the answers."""
    head, _, rest = text.partition(", ")
    return f"{head} …" if rest else head


def answers_html(candidate: CandidateResult) -> str:
    parts = [f"<p><b>{html.escape(candidate.verdict.text)}</b></p>"]
    if not candidate.questions:
        parts.append("<p>No questions were asked.</p>")
    for number, q in enumerate(candidate.questions, start=1):
        marks = ["same" if q.same else f"{q.similarity:.0%} alike"]
        if q.right is not None:
            marks.append(f"right: reference {_yes(q.reference_right)}, candidate {_yes(q.right)}")
        if q.json_ok is not None:
            marks.append(f"JSON parses: reference {_yes(q.reference_json)}, candidate {_yes(q.json_ok)}")
        parts.append(
            f"<p><b>{number}. {html.escape(q.prompt)}</b> <i>({html.escape(q.kind)}; {html.escape('; '.join(marks))})</i><br>"
            f"Reference: {html.escape(q.reference_answer)}<br>Candidate: {html.escape(q.answer)}</p>"
        )
    return "".join(parts)


def _yes(value: bool | None) -> str:
    return "yes" if value else "no"
