"""A worker's signal reaches the GUI thread while its object lives, and nothing is touched once it is deleted."""

from __future__ import annotations

import threading

import shiboken6
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QApplication

from app.misc.thread_relay import emit_from_thread


class Owner(QObject):
    said = Signal(str, int)


def test_a_workers_emit_arrives_on_the_gui_thread(qtbot) -> None:  # type: ignore[no-untyped-def]
    owner = Owner()
    heard: list[tuple[str, int, str]] = []
    owner.said.connect(lambda text, number: heard.append((text, number, threading.current_thread().name)))
    posted: list[bool] = []
    worker = threading.Thread(target=lambda: posted.append(emit_from_thread(owner, "said", "hello", 7)), name="worker")
    worker.start()
    worker.join()
    assert posted == [True] and heard == []  # handed over, not emitted on the worker
    qtbot.waitUntil(lambda: heard == [("hello", 7, "MainThread")])


def test_nothing_is_emitted_for_an_object_deleted_before_or_after_the_post(qtbot) -> None:  # type: ignore[no-untyped-def]
    gone, going = Owner(), Owner()
    heard: list[str] = []
    gone.said.connect(lambda text, _: heard.append(text))
    going.said.connect(lambda text, _: heard.append(text))
    shiboken6.delete(gone)
    assert emit_from_thread(gone, "said", "gone", 1) is False  # the worker can stop its work
    assert emit_from_thread(going, "said", "going", 2) is True
    shiboken6.delete(going)  # the tab closed while the emit waited for the GUI thread
    QApplication.processEvents()
    assert heard == []
