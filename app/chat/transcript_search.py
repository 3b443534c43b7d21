"""Finding a word in a chat's transcript: every match in every message's text pieces and code blocks.

A message card shows its Markdown as several QTextBrowser pieces (app/chat/message_view.py);
a match is a cursor in one of them, so it can be highlighted with extra selections (they never
change the text or the reader's own selection) and scrolled to. Matches are listed top to
bottom, message by message, as the reader sees them.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor, QTextDocument
from PySide6.QtWidgets import QTextBrowser, QTextEdit

from app.chat.code_block import CodeBlock
from app.chat.message_list import MessageCard, MessageList

# Fixed colours with black text: readable on the light and the dark palette alike.
MATCH_BACKGROUND, CURRENT_BACKGROUND, MATCH_TEXT = "#fde68a", "#f59e0b", "#000000"


@dataclass
class Match:
    """One occurrence: the card it is in, the text widget showing it, the cursor that selects it."""

    card: MessageCard
    browser: QTextBrowser
    cursor: QTextCursor


def text_widgets(card: MessageCard) -> list[QTextBrowser]:
    """The widgets that show a card's text, top to bottom (a code block's code view included)."""
    return [piece.view if isinstance(piece, CodeBlock) else piece for piece in card.browser.pieces()]


def find_matches(view: MessageList, text: str, match_case: bool = False) -> list[Match]:
    """Every occurrence of `text` in the transcript; earlier messages that hold one become cards first."""
    if not text:
        return []
    if view.hidden_contain(text, match_case):
        view.show_all()
    flags = QTextDocument.FindFlag.FindCaseSensitively if match_case else QTextDocument.FindFlag(0)
    matches: list[Match] = []
    for card in view.cards():
        for browser in text_widgets(card):
            document = browser.document()
            cursor = document.find(text, 0, flags)
            while not cursor.isNull():
                matches.append(Match(card, browser, cursor))
                cursor = document.find(text, cursor, flags)
    return matches


def _selection(cursor: QTextCursor, background: str) -> QTextEdit.ExtraSelection:
    selection = QTextEdit.ExtraSelection()
    char_format = QTextCharFormat()
    char_format.setBackground(QColor(background))
    char_format.setForeground(QColor(MATCH_TEXT))
    selection.format = char_format  # type: ignore[attr-defined]
    selection.cursor = cursor  # type: ignore[attr-defined]
    return selection


def highlight(matches: list[Match], current: int, previous: set[QTextBrowser]) -> set[QTextBrowser]:
    """Mark every match, the current one in a stronger colour; clears the widgets marked before. Returns those marked now."""
    marked: dict[QTextBrowser, list[QTextEdit.ExtraSelection]] = {}
    for index, match in enumerate(matches):
        background = CURRENT_BACKGROUND if index == current else MATCH_BACKGROUND
        marked.setdefault(match.browser, []).append(_selection(match.cursor, background))
    for browser in previous - set(marked):
        clear_highlights(browser)
    for browser, selections in marked.items():
        browser.setExtraSelections(selections)
    return set(marked)


def clear_highlights(browser: QTextBrowser) -> None:
    try:
        browser.setExtraSelections([])
    except RuntimeError:  # its message was deleted since
        pass
