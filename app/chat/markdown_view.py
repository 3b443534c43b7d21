"""Markdown to Qt rich text (python-markdown + pygments) and the browser that shows one message.

Qt's rich text engine understands a subset of HTML 4 and CSS, so code blocks are
wrapped in a one-cell table (a background Qt can paint) with a "Copy code" link.
Raw HTML and images in a model's answer are shown as text / dropped: a chat
view must never load files or URLs because a model wrote a tag.
"""

from __future__ import annotations

import html
import io
from typing import Any

import markdown
from markdown.extensions import Extension
from markdown.extensions.codehilite import CodeHiliteExtension
from markdown.extensions.fenced_code import FencedCodeExtension
from pygments.formatters import HtmlFormatter
from pygments.styles import get_style_by_name
from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication, QPalette, QTextOption, QWheelEvent
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser, QWidget

COPY_CODE_SCHEME = "copy-code"
LIGHT_STYLE, DARK_STYLE = "default", "github-dark"


class _NoRawHtml(Extension):
    """Show `<tags>` a model wrote as text and drop images (nothing gets loaded)."""

    def extendMarkdown(self, md: markdown.Markdown) -> None:
        md.preprocessors.deregister("html_block")
        for name in ("html", "image_link", "image_reference", "short_image_ref"):
            if name in md.inlinePatterns:
                md.inlinePatterns.deregister(name)


class MarkdownRenderer:
    """Renders one message's Markdown; collects the raw text of each code block for copying."""

    def __init__(self, dark: bool) -> None:
        self.code_blocks: list[str] = []
        self.style = get_style_by_name(DARK_STYLE if dark else LIGHT_STYLE)
        self._markdown = markdown.Markdown(
            extensions=[
                FencedCodeExtension(),
                CodeHiliteExtension(
                    pygments_formatter=self._formatter_class(),
                    noclasses=True,
                    pygments_style=DARK_STYLE if dark else LIGHT_STYLE,
                    guess_lang=False,
                ),
                "tables",
                "sane_lists",
                _NoRawHtml(),
            ]
        )

    def render(self, text: str) -> tuple[str, list[str]]:
        """HTML for Qt and the code blocks' raw text, in order."""
        self.code_blocks = []
        body = self._markdown.reset().convert(close_open_fence(text))
        return body, list(self.code_blocks)

    def _formatter_class(self) -> type[HtmlFormatter]:
        renderer = self

        class _QtCodeFormatter(HtmlFormatter):  # type: ignore[type-arg]
            def format_unencoded(self, tokensource: Any, outfile: Any) -> None:
                tokens = list(tokensource)
                raw = "".join(value for _, value in tokens)
                index = len(renderer.code_blocks)
                renderer.code_blocks.append(raw[:-1] if raw.endswith("\n") else raw)
                language = html.escape(self.options.get("lang_str", "").removeprefix("language-"))
                language = "" if language == "text" else language
                body = io.StringIO()
                super().format_unencoded(iter(tokens), body)
                # Qt draws the newline before </code> as an empty last line.
                code = body.getvalue().replace("\n</code></pre>", "</code></pre>")
                outfile.write(renderer.code_block_head(index, language) + code + "</td></tr></table>")

        return _QtCodeFormatter

    def code_block_head(self, index: int, language: str) -> str:
        background = self.style.background_color or "#f8f8f8"
        return (
            f'<table width="100%" cellspacing="0" cellpadding="6" bgcolor="{background}">'
            f'<tr><td><span style="color:#888888">{language or "code"}</span></td>'
            f'<td align="right"><a href="{COPY_CODE_SCHEME}:{index}">Copy code</a></td></tr>'
            f'<tr><td colspan="2">'
        )


def close_open_fence(text: str) -> str:
    """While streaming, close an unfinished ``` block so it renders as code already."""
    fences = sum(1 for line in text.splitlines() if line.lstrip().startswith("```"))
    return text + "\n```" if fences % 2 else text


_renderers: dict[bool, MarkdownRenderer] = {}


def render_markdown(text: str, dark: bool) -> tuple[str, list[str]]:
    """Shared renderers (one per palette kind); all rendering happens on the GUI thread."""
    if dark not in _renderers:
        _renderers[dark] = MarkdownRenderer(dark)
    return _renderers[dark].render(text)


WARM_UP_LANGUAGES = ("python", "bash", "javascript", "json", "c", "cpp")
WARM_UP_TEXT = "".join(f"```{language}\nx = 1\n```\n" for language in WARM_UP_LANGUAGES)


def warm_up() -> None:
    """Import markdown's and pygments' lazily loaded parts; safe on any thread (its own renderer).

    The first code block otherwise pays for these imports on the GUI thread, mid-stream.
    """
    MarkdownRenderer(dark=False).render("**warm** `up`\n\n" + WARM_UP_TEXT)


def palette_is_dark(palette: QPalette | None = None) -> bool:
    """Light text on a dark window; the application's palette unless one is given."""
    palette = palette or QGuiApplication.palette()
    text, window = palette.color(QPalette.ColorRole.WindowText), palette.color(QPalette.ColorRole.Window)
    return text.lightness() > window.lightness()


class MessageBrowser(QTextBrowser):
    """A read-only rich text view as tall as its content; the list around it scrolls."""

    code_copy_requested = Signal(int)  # index of the code block

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.code_blocks: list[str] = []
        self._markdown_text = ""
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
        self._apply_style_sheet()

    def set_markdown(self, text: str) -> None:
        self._markdown_text = text
        # Not this widget's palette: its transparent background would always read as "dark".
        body, self.code_blocks = render_markdown(text, palette_is_dark())
        self.setHtml(body)

    def markdown_text(self) -> str:
        return self._markdown_text

    def loadResource(self, kind: int, url: QUrl | str) -> Any:  # noqa: N802 - Qt override
        return None  # never load images or files named in a model's answer

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802
        event.ignore()  # the message list scrolls, not each message

    def changeEvent(self, event: Any) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            self._apply_style_sheet()
            self.set_markdown(self._markdown_text)

    def _apply_style_sheet(self) -> None:
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family()
        link = self.palette().color(QPalette.ColorRole.Link).name()
        self.document().setDefaultStyleSheet(
            f"pre, code {{ font-family: '{mono}'; }} a {{ color: {link}; }} p {{ margin: 4px 0; }}"
        )

    def _fit_height(self) -> None:
        height = int(self.document().size().height()) + 2 * self.frameWidth() + 2
        if height != self.height():
            self.setFixedHeight(height)

    def _on_anchor_clicked(self, url: QUrl) -> None:
        if url.scheme() == COPY_CODE_SCHEME:
            self.code_copy_requested.emit(int(url.path() or 0))
        elif url.scheme() in ("http", "https"):
            from PySide6.QtGui import QDesktopServices

            QDesktopServices.openUrl(url)
