"""The dialog an unhandled exception opens: what happened, that Hearth goes on, where the log is.

Wire it up in main():  install_excepthooks(lambda report: show_crash_dialog(window, report))
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QMessageBox, QWidget

from app.misc.logs import ErrorReport

logger = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 600
_open_boxes: list[QMessageBox] = []  # at most one: a burst of errors must not stack dialogs


def show_crash_dialog(parent: QWidget | None, report: ErrorReport) -> QMessageBox | None:
    """Open the report window-modally (non-blocking); None when one is already open."""
    if _open_boxes:
        logger.info("another error while the crash dialog is open: %s", report.summary)
        return None
    box = _build_box(parent, report)
    _open_boxes.append(box)
    box.finished.connect(lambda _result: _open_boxes.remove(box))
    box.open()
    return box


def _build_box(parent: QWidget | None, report: ErrorReport) -> QMessageBox:
    box = QMessageBox(parent)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.setObjectName("crashDialog")
    box.setIcon(QMessageBox.Icon.Critical)
    box.setWindowTitle("Hearth: unexpected error")
    box.setTextFormat(Qt.TextFormat.PlainText)  # exception text may contain '<' and '&'
    box.setText("Something went wrong inside Hearth.")
    box.setInformativeText(informative_text(report))
    box.setDetailedText(report.traceback)
    box.setStandardButtons(QMessageBox.StandardButton.Close)
    if report.log_path is not None:
        folder = report.log_path.parent
        open_button = box.addButton("Open Log Folder", QMessageBox.ButtonRole.ActionRole)
        open_button.clicked.connect(lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder))))
    return box


def informative_text(report: ErrorReport) -> str:
    """The part a person reads: the error, that chats are kept, and the log's path."""
    summary = report.summary
    if len(summary) > MAX_MESSAGE_CHARS:
        summary = summary[:MAX_MESSAGE_CHARS] + " ..."
    where = f" (in thread {report.thread_name})" if report.thread_name != "MainThread" else ""
    log = (f"The details were written to:\n{report.log_path}" if report.log_path is not None
           else "No log file was open, so the details are only in the box below.")
    return (f"{summary}{where}\n\nHearth is still running and your chats are kept; "
            f"if something no longer works, save your work and restart Hearth.\n\n"
            f"{log}\nPlease attach that file when you report the problem.")
