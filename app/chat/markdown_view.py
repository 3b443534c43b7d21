"""Markdown to Qt rich text (python-markdown + pygments) and the browser that shows one text piece.

A message is shown as pieces (app/chat/segments.py): this module renders the
text between code blocks (LaTeX math in it drawn by app/chat/math_images.py) and highlights a code block's source for its own
widget (app/chat/code_block.py). Qt's rich text engine understands a subset of
HTML 4 and CSS, so tables get their borders as attributes. Raw HTML and images
in a model's answer are shown as text / dropped: a chat view must never load
files or URLs because a model wrote a tag.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection
from typing import Any

import markdown
from markdown.extensions import Extension
from markdown.extensions.codehilite import CodeHiliteExtension
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.styles import get_style_by_name
from pygments.util import ClassNotFound
from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication, QImage, QPalette, QTextOption, QWheelEvent
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser, QWidget

from app.chat.math_images import PENDING, math_images
from app.chat.math_text import Formula, put_back, set_aside

LIGHT_STYLE, DARK_STYLE = "default", "github-dark"
DISPLAY_SCALE = 1.3  # display math a little larger than the text around it
TABLE_OPEN = '<table border="1" cellspacing="0" cellpadding="5" style="border-collapse: collapse; border-color: {};">'


class _NoRawHtml(Extension):
    """Show `<tags>` a model wrote as text and drop images (nothing gets loaded)."""

    def extendMarkdown(self, md: markdown.Markdown) -> None:
        md.preprocessors.deregister("html_block")
        for name in ("html", "image_link", "image_reference", "short_image_ref"):
            if name in md.inlinePatterns:
                md.inlinePatterns.deregister(name)


class MarkdownRenderer:
    """Renders the text of one piece (fenced code is cut out before: it has its own widget)."""

    def __init__(self, dark: bool) -> None:
        self.dark = dark
        self.style = get_style_by_name(DARK_STYLE if dark else LIGHT_STYLE)
        self._markdown = markdown.Markdown(
            extensions=[
                # An indented code block stays inside the text: highlighted, without a widget of its own.
                CodeHiliteExtension(noclasses=True, pygments_style=self.style_name, guess_lang=False),
                "tables",
                "sane_lists",
                _NoRawHtml(),
            ]
        )

    @property
    def style_name(self) -> str:
        return DARK_STYLE if self.dark else LIGHT_STYLE

    def render(self, text: str) -> str:
        """HTML for Qt."""
        body = self._markdown.reset().convert(text)
        return body.replace("<table>", TABLE_OPEN.format("#5f6368" if self.dark else "#c0c0c0"))


RENDERED_KEPT = 32  # the last texts rendered (a message rendered ahead of its card: app/chat/message_view.py)


@functools.lru_cache(maxsize=64)
def _lexer(language: str) -> Lexer:
    try:
        return get_lexer_by_name(language, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


@functools.lru_cache(maxsize=4)
def _code_formatter(dark: bool) -> HtmlFormatter:  # type: ignore[type-arg]
    return HtmlFormatter(noclasses=True, nowrap=True, style=DARK_STYLE if dark else LIGHT_STYLE)


@functools.lru_cache(maxsize=RENDERED_KEPT)
def code_html(code: str, language: str, dark: bool, wrapped: bool = False) -> str:
    """A code block's source, highlighted for its language (plain where pygments has no lexer)."""
    # Qt never wraps a plain <pre>; pre-wrap keeps the spaces and wraps at the edge.
    opening = '<pre style="white-space: pre-wrap;">' if wrapped else "<pre>"
    if not code:
        return f"{opening} </pre>"
    spans = highlight(code, _lexer(language or "text"), _code_formatter(dark))
    return f"{opening}{spans.removesuffix(chr(10))}</pre>"


def code_background(dark: bool) -> str:
    return get_style_by_name(DARK_STYLE if dark else LIGHT_STYLE).background_color or "#f8f8f8"


_renderers: dict[bool, MarkdownRenderer] = {}


@functools.lru_cache(maxsize=RENDERED_KEPT)
def render_markdown(text: str, dark: bool) -> str:
    """Shared renderers (one per palette kind); all rendering happens on the GUI thread."""
    if dark not in _renderers:
        _renderers[dark] = MarkdownRenderer(dark)
    return _renderers[dark].render(text)


WARM_UP_LANGUAGES = ("python", "bash", "javascript", "json", "c", "cpp")


def warm_up() -> None:
    """Import markdown's and pygments' lazily loaded parts; safe on any thread (its own renderer).

    The first code block otherwise pays for these imports on the GUI thread, mid-stream.
    """
    MarkdownRenderer(dark=False).render("**warm** `up`\n\n| a |\n|---|\n| b |\n\n    indented = 1\n")
    for language in WARM_UP_LANGUAGES:
        code_html("x = 1", language, dark=False)


def palette_is_dark(palette: QPalette | None = None) -> bool:
    """Light text on a dark window; the application's palette unless one is given."""
    palette = palette or QGuiApplication.palette()
    text, window = palette.color(QPalette.ColorRole.WindowText), palette.color(QPalette.ColorRole.Window)
    return text.lightness() > window.lightness()


def text_style_sheet(palette: QPalette, dark: bool) -> str:
    """The document style: monospace code, inline code on a tinted background, link colour."""
    mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family()
    link = palette.color(QPalette.ColorRole.Link).name()
    tint = "#2d2f33" if dark else "#eef0f2"
    return (
        f"pre, code {{ font-family: '{mono}'; }} code {{ background-color: {tint}; }}"
        f" a {{ color: {link}; }} p {{ margin: 4px 0; }} th {{ background-color: {tint}; }}"
    )


_CITATION = re.compile(r"\[(\d+)\]")
_CODE_OR_TAG = re.compile(r"(<pre.*?</pre>|<code.*?</code>|<a .*?</a>|<[^>]*>)", re.DOTALL)


def link_citations(html: str, numbers: Collection[int]) -> str:
    """Each "[n]" of the text (not in code, a tag or a link) that names an excerpt becomes a cite:n link."""
    def link(match: re.Match[str]) -> str:
        number = int(match.group(1))
        return f'<a href="cite:{number}">[{number}]</a>' if number in numbers else match.group(0)

    parts = _CODE_OR_TAG.split(html)
    return "".join(part if index % 2 else _CITATION.sub(link, part) for index, part in enumerate(parts))


class MessageBrowser(QTextBrowser):
    """A read-only rich text view as tall as its content; the list around it scrolls. Math is drawn as images."""

    citation_clicked = Signal(int)  # the number of an excerpt the answer cites ("[1]")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Message text")
        self._markdown_text = ""
        self._math: dict[str, QImage] = {}  # resource name -> drawn formula, for loadResource
        self._waiting: set[str] = set()  # formulas still being drawn
        self._dark: bool | None = None  # the palette kind the style sheet was made for
        self._citations: frozenset[int] = frozenset()  # the excerpts its "[n]" may name
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.viewport().setAutoFillBackground(False)
        self.setStyleSheet("QTextBrowser { background: transparent; }")
        self.document().setDocumentMargin(2)
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self.anchorClicked.connect(self._on_anchor_clicked)
        # Connected for the widget's life (Qt drops it with the widget): a formula drawn later re-renders.
        math_images().drawn.connect(self._on_math_drawn)
        self._apply_style_sheet()

    def set_markdown(self, text: str) -> None:
        self._markdown_text = text
        source, formulas = set_aside(text)
        # Not this widget's palette: its transparent background would always read as "dark".
        body = render_markdown(source, palette_is_dark())
        if self._citations:
            body = link_citations(body, self._citations)
        self.setHtml(put_back(body, formulas, self._drawn_formulas(formulas)) if formulas else body)

    def set_citations(self, numbers: Collection[int]) -> None:
        """The excerpts of the question this answer may cite: their "[n]" become links."""
        if frozenset(numbers) != self._citations:
            self._citations = frozenset(numbers)
            self.set_markdown(self._markdown_text)

    def _drawn_formulas(self, formulas: list[Formula]) -> dict[int, str | None]:
        """Resource names of the formulas drawn already; the others show as source until `drawn`."""
        images, color = math_images(), self.palette().color(QPalette.ColorRole.Text).name()
        names: dict[int, str | None] = {}
        self._math, waiting = {}, set()
        for index, formula in enumerate(formulas):
            points = self.font().pointSizeF() * (DISPLAY_SCALE if formula.display else 1.0)
            name = formula.key(color, points)
            image = images.image(name, formula, color, points, self.devicePixelRatioF())
            if isinstance(image, QImage):
                self._math[name], names[index] = image, name
            elif image == PENDING:
                waiting.add(name)
        self._waiting = waiting
        return names

    def _on_math_drawn(self, name: str) -> None:
        if name in self._waiting:
            self._waiting.discard(name)
            if not self._waiting:
                self.set_markdown(self._markdown_text)

    def math_images(self) -> dict[str, QImage]:
        """The formulas this piece shows as images (by resource name)."""
        return dict(self._math)

    def waiting_for_math(self) -> bool:
        return bool(self._waiting)

    def markdown_text(self) -> str:
        return self._markdown_text

    def loadResource(self, kind: int, url: QUrl | str) -> Any:  # noqa: N802 - Qt override
        # Only formulas drawn here; never images or files named in a model's answer.
        return self._math.get(url.toString() if isinstance(url, QUrl) else url)

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802
        event.ignore()  # the message list scrolls, not each message

    def changeEvent(self, event: Any) -> None:  # noqa: N802
        super().changeEvent(event)
        # Only a switch between light and dark: a widget gets palette events just by being placed.
        if event.type() == event.Type.PaletteChange and palette_is_dark() != self._dark:
            self._apply_style_sheet()
            self.set_markdown(self._markdown_text)

    def _apply_style_sheet(self) -> None:
        self._dark = palette_is_dark()
        self.document().setDefaultStyleSheet(text_style_sheet(self.palette(), self._dark))

    def _fit_height(self) -> None:
        height = int(self.document().size().height()) + 2 * self.frameWidth() + 2
        if height != self.height():
            self.setFixedHeight(height)

    def _on_anchor_clicked(self, url: QUrl) -> None:
        if url.scheme() == "cite" and url.path().isdigit():
            self.citation_clicked.emit(int(url.path()))
        elif url.scheme() in ("http", "https"):
            from PySide6.QtGui import QDesktopServices

            QDesktopServices.openUrl(url)

