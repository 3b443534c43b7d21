"""Attached files in the real window (scripted engine): chips with pages, tokens and whole/searched or
the file's error, indexing off the GUI thread with progress, and the files in the next Submit."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from app.chat.attachments import documents_folder
from engine.documents.index import index_path
from tests.engine.documents.conftest import PLANTED_PAGE

QUESTION = "Where does Ottoline Brackwater keep the spare lamp oil?"


def _ready(tab) -> bool:  # type: ignore[no-untyped-def]
    return all(chip.error or chip.doc_id is not None for chip in tab.attachments.chips.values())


def _labels(tab) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {chip.name: chip.label.text() for chip in tab.attachments.chips.values()}


def test_chips_then_the_files_in_the_next_submit(qtbot, scripted_window, long_pdf: Path, markdown_file: Path,  # type: ignore[no-untyped-def]
                                                  binary_txt: Path) -> None:
    window = scripted_window()
    tab = window.current_tab()
    seen: list[str] = []
    tab.attachments.worker.progressed.connect(lambda key, what, share: seen.append(what))
    tab.attachments.attach([markdown_file, long_pdf, binary_txt])
    qtbot.waitUntil(lambda: _ready(tab), timeout=60000)
    labels = _labels(tab)
    assert labels["notes.md"].startswith("notes.md · 1 page · ≈") and labels["notes.md"].endswith(" tokens · whole")
    assert labels["harbour.pdf"].startswith("harbour.pdf · 300 pages · ≈") and labels["harbour.pdf"].endswith("searched")
    assert labels["program.txt"] == "⚠ program.txt: this is not a text file (it holds binary data), so it cannot be…"
    binary_chip = next(chip for chip in tab.attachments.chips.values() if chip.name == "program.txt")
    assert binary_chip.toolTip() == "program.txt: this is not a text file (it holds binary data), so it cannot be read as text."
    assert {"reading", "indexing"} <= set(seen)
    assert index_path(documents_folder(), tab.chat_id).is_file()
    tab.input.setPlainText(QUESTION)
    tab.send()
    content = window.bridge.submitted[-1][1][-1].content
    assert content.startswith("--- notes.md ---\n# Notes") and content.endswith(QUESTION)
    assert f"[1] harbour.pdf, page {PLANTED_PAGE}\n" in content and "copper vault" in " ".join(content.split())
    assert "program.txt" not in content
    assert tab.view.cards()[-2].role == "user" and tab.attachments.chips == {}
    window.bridge.answer(tab.chat_id, "In the copper vault [1].")


def test_a_dropped_file_is_attached(qtbot, scripted_window, markdown_file: Path) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    tab = window.current_tab()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(markdown_file))])
    buttons, keys = Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier
    enter = QDragEnterEvent(QPoint(5, 5), Qt.DropAction.CopyAction, mime, buttons, keys)
    QApplication.sendEvent(tab.input.viewport(), enter)
    assert enter.isAccepted()
    QApplication.sendEvent(tab.input.viewport(), QDropEvent(QPointF(5, 5), Qt.DropAction.CopyAction, mime, buttons, keys))
    assert [chip.name for chip in tab.attachments.chips.values()] == ["notes.md"]
    qtbot.waitUntil(lambda: _ready(tab), timeout=20000)
    assert tab.input.toPlainText() == ""  # the path was not pasted as text
    tab.attachments.shutdown()


def test_the_index_is_deleted_with_the_chat(tmp_path: Path) -> None:
    from app.history.store import HistoryStore
    from engine.documents.extract import Document, Page
    from engine.documents.index import DocumentIndex

    store = HistoryStore.open(tmp_path / "history.sqlite3")
    kept, doomed = store.create_chat(title="Kept"), store.create_chat(title="Doomed")
    for chat in (kept, doomed):
        index = DocumentIndex(index_path(tmp_path / "documents", chat.id))
        index.add(Document("a.txt", "text", (Page(1, "some text"),)))
        index.close()
    store.delete_chat(doomed.id)
    assert index_path(tmp_path / "documents", doomed.id).is_file()  # a deleted chat can still be restored
    assert store.purge_deleted() == 1
    store.close()
    assert [path.name for path in (tmp_path / "documents").iterdir()] == [f"{kept.id}.documents.sqlite"]
