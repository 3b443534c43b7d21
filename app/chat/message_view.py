"""The body of one message: its text pieces and code blocks, each in a widget of its own.

Setting new Markdown (a streaming answer grows, a tick at a time) compares the
new pieces with the ones shown: a piece that did not change keeps its widget and
its rendering, a changed piece of the same kind is re-rendered in place, and only
the rest is rebuilt. A growing answer so costs one paragraph or one code block per
tick, however long it already is.
"""

from __future__ import annotations

from collections.abc import Collection

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.chat.code_block import CodeBlock
from app.chat.markdown_view import MessageBrowser, code_html, palette_is_dark, render_markdown
from app.chat.math_text import set_aside
from app.chat.segments import Segment, extend_segments

Piece = MessageBrowser | CodeBlock


def prerender(text: str) -> None:
    """Render the pieces of `text` ahead of its widgets, into the renderers' caches: a long chat makes
    its next earlier card in two event-loop turns, this one and the widgets', so neither makes a frame wait long."""
    dark = palette_is_dark()
    for segment in extend_segments([], "", text) or ():
        if segment.kind == "code":
            code_html(segment.text, segment.language, dark)
        else:
            render_markdown(set_aside(segment.text)[0], dark)


class MessageView(QWidget):
    """Markdown as a column of MessageBrowser (text) and CodeBlock (code) widgets."""

    copied = Signal(str)  # a code block's Copy: the exact code
    citation_clicked = Signal(int)  # an "[n]" naming an excerpt of the question

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._markdown_text = ""
        self._segments: list[Segment] = []
        self._pieces: list[Piece] = []
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(4)
        self.renders = 0  # pieces (re)rendered so far: what "render only what changed" is measured by
        self._citations: frozenset[int] = frozenset()

    def set_markdown(self, text: str) -> None:
        if text == self._markdown_text and self._pieces:
            return
        segments = extend_segments(self._segments, self._markdown_text, text) or [Segment("text", "")]
        self._markdown_text = text
        for index, segment in enumerate(segments):
            if index < len(self._segments) and self._segments[index] == segment:
                continue
            self._show(index, segment)
        for piece in self._pieces[len(segments):]:
            self._layout.removeWidget(piece)
            piece.deleteLater()
        del self._pieces[len(segments):]
        self._segments = segments

    def set_citations(self, numbers: Collection[int]) -> None:
        self._citations = frozenset(numbers)
        for piece in self._pieces:
            if isinstance(piece, MessageBrowser):
                piece.set_citations(self._citations)

    def markdown_text(self) -> str:
        return self._markdown_text

    @property
    def code_blocks(self) -> list[str]:
        return [piece.code for piece in self._pieces if isinstance(piece, CodeBlock)]

    def code_block_widgets(self) -> list[CodeBlock]:
        return [piece for piece in self._pieces if isinstance(piece, CodeBlock)]

    def pieces(self) -> list[Piece]:
        return list(self._pieces)

    def toPlainText(self) -> str:  # noqa: N802 - the name QTextBrowser readers know
        return "\n".join(piece.code if isinstance(piece, CodeBlock) else piece.toPlainText() for piece in self._pieces)

    def _show(self, index: int, segment: Segment) -> None:
        self.renders += 1
        piece = self._pieces[index] if index < len(self._pieces) else None
        wanted = CodeBlock if segment.kind == "code" else MessageBrowser
        if piece is not None and not isinstance(piece, wanted):
            self._layout.removeWidget(piece)
            piece.deleteLater()
            piece = None
        if piece is None:
            piece = self._new_piece(segment)
            if index < len(self._pieces):
                self._pieces[index] = piece
            else:
                self._pieces.append(piece)
            self._layout.insertWidget(index, piece)
        if isinstance(piece, CodeBlock):
            piece.set_code(segment.text, segment.language)
        else:
            piece.set_markdown(segment.text)

    def _new_piece(self, segment: Segment) -> Piece:
        if segment.kind == "code":
            block = CodeBlock(parent=self)
            block.copied.connect(self.copied)
            return block
        browser = MessageBrowser(self)
        browser.set_citations(self._citations)
        browser.citation_clicked.connect(self.citation_clicked)
        return browser
