"""Code blocks scroll sideways instead of clipping, copy their exact code, wrap on request; text pieces
keep their rendering while an answer grows; inline code and tables render."""

from __future__ import annotations

from PySide6.QtGui import QGuiApplication

from app.chat.code_block import CodeBlock
from app.chat.message_list import MessageCard
from app.chat.segments import Segment, split_segments
from tests.app.helpers import monospace_fragments

LONG_LINE = "result = compute(" + ", ".join(f"argument_{i}" for i in range(40)) + ")"
ANSWER = f"Here is the call:\n\n```python\n{LONG_LINE}\nprint(result)\n```\n\nThat is all."


def test_fences_split_the_text_and_an_open_fence_is_still_code() -> None:
    assert split_segments(ANSWER) == [
        Segment("text", "Here is the call:"),
        Segment("code", f"{LONG_LINE}\nprint(result)", "python"),
        Segment("text", "That is all."),
    ]
    assert split_segments("Start\n\n  ```sh\n  ls -l\n") == [Segment("text", "Start"), Segment("code", "ls -l", "sh", closed=False)]
    # Paragraphs are pieces of their own, but a list and a table stay whole.
    assert [s.text for s in split_segments("One.\n\nTwo.\n\n1. a\n\n2. b\n\n| x |\n|---|\n| 1 |")] == [
        "One.", "Two.", "1. a\n\n2. b", "| x |\n|---|\n| 1 |"]


def _shown_card(qtbot, text: str, width: int = 420) -> MessageCard:  # type: ignore[no-untyped-def]
    card = MessageCard("assistant", text)
    qtbot.addWidget(card)
    card.resize(width, 400)
    card.show()
    qtbot.waitExposed(card)
    return card


def test_a_long_code_line_scrolls_sideways_and_wrap_turns_that_off(qtbot) -> None:  # type: ignore[no-untyped-def]
    card = _shown_card(qtbot, ANSWER)
    [block] = card.browser.code_block_widgets()
    bar = block.view.horizontalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0)  # clipped before: now the line scrolls
    assert block.language_label.text() == "python"
    assert block.view.height() > block.view.document().size().height()  # room for the scroll bar too
    block.wrap_button.click()
    qtbot.waitUntil(lambda: bar.maximum() == 0)
    assert LONG_LINE in block.view.toPlainText()


def test_copy_puts_the_exact_code_on_the_clipboard(qtbot) -> None:  # type: ignore[no-untyped-def]
    card = _shown_card(qtbot, ANSWER)
    copied: list[str] = []
    card.copied.connect(copied.append)
    [block] = card.browser.code_block_widgets()
    block.copy_button.click()
    assert QGuiApplication.clipboard().text() == f"{LONG_LINE}\nprint(result)" == copied[-1]
    assert block.copy_button.text() == "Copied"


def test_a_growing_answer_renders_only_its_last_piece(qtbot) -> None:  # type: ignore[no-untyped-def]
    card = _shown_card(qtbot, "First paragraph.")
    view = card.browser
    first = view.pieces()[0]
    view.set_markdown("First paragraph.\n\n```python\nx = 1")
    code = view.pieces()[1]
    assert isinstance(code, CodeBlock) and code.code == "x = 1"
    before = view.renders
    view.set_markdown("First paragraph.\n\n```python\nx = 1\ny = 2")
    assert view.renders == before + 1 and view.pieces()[:2] == [first, code] and code.code == "x = 1\ny = 2"
    view.set_markdown("First paragraph.\n\n```python\nx = 1\ny = 2\n```\n\nDone.")
    assert view.pieces()[:2] == [first, code] and view.pieces()[2].toPlainText() == "Done."


def test_inline_code_and_tables_render(qtbot) -> None:  # type: ignore[no-untyped-def]
    card = _shown_card(qtbot, "Call `run()` now.\n\n| name | size |\n|---|---|\n| a.txt | 12 |")
    text, table = card.browser.pieces()
    assert text.toPlainText() == "Call run() now."
    assert monospace_fragments(text) == ["run()"]
    cursor = table.document().rootFrame().childFrames()
    assert cursor and cursor[0].__class__.__name__ == "QTextTable"
    assert cursor[0].rows() == 2 and cursor[0].columns() == 2


def test_a_growing_answer_is_split_again_only_from_its_last_piece() -> None:
    from app.chat.segments import extend_segments
    from app.misc.gui_probe import answer_text

    pieces = answer_text(600)
    text, segments = "", []
    for start in range(0, len(pieces), 7):  # streamed a few words at a time
        grown = text + "".join(pieces[start:start + 7])
        segments, text = extend_segments(segments, text, grown), grown
        assert segments == split_segments(text)
    assert [s.start for s in segments] == [s.start for s in split_segments(text)] and len(segments) > 10
