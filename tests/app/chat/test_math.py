"""LaTeX math: found where it is math (not in "$5 and $10", not in code), drawn as an image by
matplotlib's mathtext off the GUI thread, or shown as monospace source where it cannot be drawn."""

from __future__ import annotations

from app.chat.markdown_view import MessageBrowser
from app.chat.math_text import Formula, set_aside
from tests.app.helpers import monospace_fragments

SLOW_FIRST_DRAW_MS = 60_000  # matplotlib builds its font list the first time on a machine


def test_math_is_found_and_prices_and_code_are_left_alone() -> None:
    text, formulas = set_aside(r"Costs $5 and $10. Area $\pi r^2$, \(a+b\), `$HOME` and $$\int_0^1 x\,dx$$ end")
    assert formulas == [Formula(r"\pi r^2", False), Formula("a+b", False), Formula(r"\int_0^1 x\,dx", True)]
    assert text.startswith("Costs $5 and $10. Area HEARTHMATH0Z, HEARTHMATH1Z, `$HOME` and") and "\n\nHEARTHMATH2Z\n\n" in text
    assert set_aside(r"\[ x \]")[1] == [Formula("x", True)]


def _browser(qtbot, text: str) -> MessageBrowser:  # type: ignore[no-untyped-def]
    browser = MessageBrowser()
    qtbot.addWidget(browser)
    browser.resize(400, 200)
    browser.set_markdown(text)
    qtbot.waitUntil(lambda: not browser.waiting_for_math(), timeout=SLOW_FIRST_DRAW_MS)
    return browser


def test_math_is_drawn_as_an_image(qtbot) -> None:  # type: ignore[no-untyped-def]
    browser = _browser(qtbot, r"Euler: $e^{i\pi} + 1 = 0$ and $$\frac{a}{b}$$")
    images = browser.math_images()
    assert len(images) == 2 and all(not image.isNull() and image.width() > 5 for image in images.values())
    html = browser.toHtml()
    assert all(f'src="{name}"' in html for name in images)
    assert "e^{i" not in browser.toPlainText()  # the source is not shown as text


def test_math_mathtext_cannot_draw_shows_as_monospace_source(qtbot) -> None:  # type: ignore[no-untyped-def]
    browser = _browser(qtbot, r"See $\begin{pmatrix} 1 \end{pmatrix}$ here")
    assert browser.math_images() == {}
    assert monospace_fragments(browser) == [r"$\begin{pmatrix} 1 \end{pmatrix}$"]

