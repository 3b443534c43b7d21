"""Citations in the real window (scripted engine): an answer's "[1]" for an excerpt of a searched file is a
link; clicking it shows the chunk with its file and page. The question's card shows the question and the
file as a chip, not the excerpts. After a restart the reopened chat shows and does the same."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QTextCursor

from app.chat.markdown_view import MessageBrowser
from tests.app.helpers import wait_restored
from tests.app.scripted_bridge import model_info

PLANTED = "The spare lamp oil is kept in the copper vault under the north stair."


def long_notes(folder: Path) -> Path:
    sections = [f"## Section {n}\n\n" + " ".join(f"Harbour note {n}.{k} about tides and ropes." for k in range(40))
                for n in range(1, 13)]
    sections[6] += "\n\n" + PLANTED
    path = folder / "harbour notes.md"
    path.write_text("# Harbour\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")
    return path


def links(card) -> list[str]:  # type: ignore[no-untyped-def]
    found = []
    for browser in card.browser.findChildren(MessageBrowser):
        cursor = QTextCursor(browser.document())
        while not cursor.atEnd():
            cursor.movePosition(QTextCursor.MoveOperation.NextCharacter)
            href = cursor.charFormat().anchorHref()
            if href and href not in found:
                found.append(href)
    return found


def shows_question_and_file(card) -> bool:  # type: ignore[no-untyped-def]
    return (card.text() == "Where is the spare lamp oil kept?" and card.files is not None
            and [label.text() for label in card.files.labels] == ["harbour notes.md · searched"])


def click(card, href: str) -> None:  # type: ignore[no-untyped-def]
    browser = next(b for b in card.browser.findChildren(MessageBrowser) if f'href="{href}"' in b.toHtml())
    browser.anchorClicked.emit(QUrl(href))


def test_a_cited_excerpt_is_a_link_that_shows_its_chunk(qtbot, scripted_window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    info = model_info(context_length=1024)  # the file does not fit: it is searched
    window = scripted_window(info=info)
    wait_restored(qtbot, window)
    tab = window.current_tab()
    tab.attachments.attach([long_notes(tmp_path)])
    qtbot.waitUntil(lambda: all(chip.doc_id is not None for chip in tab.attachments.chips.values()), timeout=20000)
    assert next(iter(tab.attachments.chips.values())).label.text().endswith("searched")
    tab.input.setPlainText("Where is the spare lamp oil kept?")
    tab.send()
    assert "[1] harbour notes.md\n" in window.bridge.submitted[-1][1][-1].content
    window.bridge.answer(tab.chat_id, "In the copper vault [1]; see also [9] and `a[1]`.")
    assert shows_question_and_file(tab.view.cards()[0])
    answer = tab.view.cards()[-1]
    assert links(answer) == ["cite:1"]  # [9] names no excerpt; code stays code
    click(answer, "cite:1")
    shown = tab.citations.window
    assert shown is not None and shown.isVisible() and shown.heading.text() == "[1] harbour notes.md"
    assert PLANTED in shown.body.toPlainText() and "Harbour note 7." in shown.body.toPlainText()
    shown.close()
    chat_id = tab.chat_id
    window.close()
    again = scripted_window(info=info)
    wait_restored(qtbot, again)
    restored = again.current_tab()
    assert restored.chat_id == chat_id
    assert shows_question_and_file(restored.view.cards()[0])
    assert restored.messages[0].content.startswith("Excerpts from the attached files")  # the model still gets them
    assert restored.title == "Where is the spare lamp oil kept?"
    answer = [card for card in restored.view.cards() if card.role == "assistant"][-1]
    assert links(answer) == ["cite:1"]
    click(answer, "cite:1")
    assert restored.citations.window is not None and PLANTED in restored.citations.window.body.toPlainText()
