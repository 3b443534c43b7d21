"""LaTeX math: found where it is math (not in "$5 and $10", not in code), drawn as an image by
matplotlib's mathtext off the GUI thread, or shown as monospace source where it cannot be drawn."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor, QImage

from app.chat.markdown_view import MessageBrowser
from app.chat.math_text import Formula, draw_png, set_aside
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


def test_math_nothing_can_draw_shows_as_monospace_source(qtbot) -> None:  # type: ignore[no-untyped-def]
    browser = _browser(qtbot, r"See $\begin{pmatrix} 1 \end{bmatrix}$ here")  # opened and closed differently
    assert browser.math_images() == {}
    assert monospace_fragments(browser) == [r"$\begin{pmatrix} 1 \end{bmatrix}$"]


ENVIRONMENTS = [
    r"\begin{matrix} a & b \\ c & d \end{matrix}",
    r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}",
    r"\begin{bmatrix} x \\ y \end{bmatrix}",
    r"f(x) = \begin{cases} 1 & x > 0 \\ 0 & \text{otherwise} \end{cases}",
    r"\begin{align} a &= b + c \\ d &= e \end{align}",
]


def _ink(image: QImage) -> list[QColor]:
    """The colours of the pixels the formula covers (its background is transparent)."""
    image = image.convertToFormat(QImage.Format.Format_ARGB32)
    return [image.pixelColor(x, y) for y in range(image.height()) for x in range(image.width())
            if image.pixelColor(x, y).alpha() > 200]


@pytest.mark.parametrize("source", ENVIRONMENTS, ids=["matrix", "pmatrix", "bmatrix", "cases", "align"])
def test_environments_mathtext_lacks_are_drawn_in_the_text_colour(source: str) -> None:
    for color, dark in (("#000000", True), ("#e8eaed", False)):  # light theme's text, dark theme's
        png = draw_png(source, color, 11.0, 96)
        assert png is not None
        image = QImage.fromData(png)
        ink = _ink(image)
        assert image.width() > 20 and image.height() > 12 and len(ink) > 30
        assert all((pixel.lightness() < 60) == dark for pixel in ink)  # the colour asked for, solid
        assert image.pixelColor(0, 0).alpha() == 0  # on the message's own background


def test_environments_are_sharp_at_any_size() -> None:
    small = QImage.fromData(draw_png(ENVIRONMENTS[1], "#000000", 11.0, 96))
    large = QImage.fromData(draw_png(ENVIRONMENTS[1], "#000000", 11.0, 192))  # a 2x screen: twice the pixels
    assert abs(large.width() - 2 * small.width()) <= 2 and abs(large.height() - 2 * small.height()) <= 2
    assert len(_ink(large)) > 3 * len(_ink(small))  # drawn at that size, not an upscaled copy


def test_a_bare_environment_in_an_answer_is_drawn_not_shown_as_source(qtbot) -> None:  # type: ignore[no-untyped-def]
    text = "The system:\n\n\\begin{align}\nx &= 1 \\\\\ny &= 2\n\\end{align}\n\nand $\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}$."
    assert [f.display for f in set_aside(text)[1]] == [True, False]
    browser = _browser(qtbot, text)
    images = browser.math_images()
    assert len(images) == 2 and all(image.width() > 10 for image in images.values())
    assert "begin" not in browser.toPlainText() and "x &= 1" not in browser.toPlainText()
    assert monospace_fragments(browser) == []



def test_a_formula_that_breaks_the_drawer_fails_alone(qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from app.chat import math_images as module

    real = module.draw_png

    def breaking(source: str, *args: object) -> bytes | None:
        if source == "boom":
            raise RuntimeError("a drawing library's own bug")
        return real(source, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "draw_png", breaking)
    images = module.math_images()
    boom, fine = Formula("boom", False), Formula(r"\alpha + 1", False)
    for formula in (boom, fine):
        images.image(formula.key("#000000", 11.0), formula, "#000000", 11.0, 1.0)
    qtbot.waitUntil(lambda: images.image(fine.key("#000000", 11.0), fine, "#000000", 11.0, 1.0) != module.PENDING,
                    timeout=SLOW_FIRST_DRAW_MS)
    assert images.image(boom.key("#000000", 11.0), boom, "#000000", 11.0, 1.0) == module.FAILED
    assert isinstance(images.image(fine.key("#000000", 11.0), fine, "#000000", 11.0, 1.0), QImage)
