"""Logging to a rotating file, --verbose mirroring, and unhandled exceptions reaching the crash dialog."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, QThread, QTimer
from PySide6.QtWidgets import QMessageBox, QWidget

from app.misc import logs
from app.misc.crash_dialog import show_crash_dialog


@pytest.fixture
def log_dir(tmp_path: Path):
    yield tmp_path / "logs"
    logs.shutdown_logging()
    for name in logs.OUR_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET)


@pytest.fixture
def reports(qtbot):
    """Install the hooks for one test; the list fills with ErrorReports on the GUI thread."""
    received: list[tuple[logs.ErrorReport, bool]] = []
    gui_thread = QCoreApplication.instance().thread()
    uninstall = logs.install_excepthooks(lambda r: received.append((r, QThread.currentThread() is gui_thread)))
    yield received
    uninstall()


def test_setup_logging_writes_levels_to_the_file(log_dir: Path) -> None:
    path = logs.setup_logging(log_dir=log_dir)
    assert path == log_dir / "hearth.log" == logs.current_log_path()
    logging.getLogger("app.example").debug("debug line stays out")
    logging.getLogger("engine.example").warning("slot %d is full", 3)
    text = path.read_text(encoding="utf-8")
    assert "WARNING  [MainThread] engine.example: slot 3 is full" in text
    assert "debug line stays out" not in text


def test_verbose_mirrors_to_the_console_at_debug(log_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = logs.setup_logging(verbose=True, log_dir=log_dir)
    logging.getLogger("app.example").debug("tokenizer cache hit")
    assert "DEBUG    [MainThread] app.example: tokenizer cache hit" in capsys.readouterr().err
    assert "tokenizer cache hit" in path.read_text(encoding="utf-8")


def test_the_file_rotates(log_dir: Path) -> None:
    path = logs.setup_logging(log_dir=log_dir, max_bytes=2_000)
    for number in range(100):
        logging.getLogger("app.example").info("line %03d %s", number, "x" * 40)
    backups = sorted(p.name for p in log_dir.iterdir())
    assert backups == ["hearth.log", "hearth.log.1", "hearth.log.2", "hearth.log.3"]
    assert "line 099" in path.read_text(encoding="utf-8")
    assert path.stat().st_size <= 2_000


def test_gui_thread_exception_reaches_callback_and_log(qtbot, log_dir: Path, reports) -> None:
    path = logs.setup_logging(log_dir=log_dir)

    def on_timer() -> None:
        raise ValueError("the answer was not 42")

    QTimer.singleShot(0, on_timer)  # raised from a slot, inside Qt's event loop
    qtbot.waitUntil(lambda: len(reports) == 1, timeout=5000)
    report, on_gui_thread = reports[0]
    assert on_gui_thread
    assert (report.exc_type, report.message, report.thread_name) == ("ValueError", "the answer was not 42", "MainThread")
    assert report.log_path == path
    assert "in on_timer" in report.traceback
    text = path.read_text(encoding="utf-8")
    assert "CRITICAL [MainThread] app.misc.logs: unhandled exception in thread MainThread" in text
    assert "ValueError: the answer was not 42" in text


def test_worker_thread_exception_is_reported_on_the_gui_thread(qtbot, log_dir: Path, reports) -> None:
    path = logs.setup_logging(log_dir=log_dir)

    def work() -> None:
        raise RuntimeError("worker lost its file")

    worker = threading.Thread(target=work, name="hearth-test-worker")
    worker.start()
    worker.join()
    qtbot.waitUntil(lambda: len(reports) == 1, timeout=5000)
    report, on_gui_thread = reports[0]
    assert on_gui_thread
    assert (report.summary, report.thread_name) == ("RuntimeError: worker lost its file", "hearth-test-worker")
    assert "RuntimeError: worker lost its file" in path.read_text(encoding="utf-8")


@pytest.mark.qt_log_ignore("propagateSizeHints")  # the offscreen platform's note on any shown window
def test_crash_dialog_says_what_happened_and_where_the_log_is(qtbot, tmp_path: Path) -> None:
    parent = QWidget()
    qtbot.addWidget(parent)
    report = logs.ErrorReport("KeyError", "'tab-3' <missing>", "Traceback ...\nKeyError: 'tab-3'\n",
                              "MainThread", tmp_path / "hearth.log")
    box = show_crash_dialog(parent, report)
    assert isinstance(box, QMessageBox)
    assert box.windowTitle() == "Hearth: unexpected error"
    assert "KeyError: 'tab-3' <missing>" in box.informativeText()
    assert str(tmp_path / "hearth.log") in box.informativeText()
    assert box.detailedText() == report.traceback
    assert [b.text() for b in box.buttons() if b.text() == "Open Log Folder"] == ["Open Log Folder"]
    assert show_crash_dialog(parent, report) is None  # a second error does not stack a second box
    box.done(0)
    second = show_crash_dialog(parent, report)
    assert isinstance(second, QMessageBox)
    second.done(0)
