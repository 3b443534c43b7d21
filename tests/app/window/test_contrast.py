"""WCAG AA contrast (4.5:1 for body text) in the light and the dark theme: the palette's text / background
pairs, and the colours the style sheet gives the widgets that have their own (Send, hints, errors)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QLabel, QPushButton, QVBoxLayout, QWidget

from app.chat.transcript_search import CURRENT_BACKGROUND, MATCH_BACKGROUND, MATCH_TEXT
from app.window.theme import dark_palette, light_palette, style_sheet

AA_BODY = 4.5
R = QPalette.ColorRole
PAIRS = [  # text on background, as the window draws them
    (R.WindowText, R.Window), (R.Text, R.Base), (R.Text, R.AlternateBase), (R.Text, R.Window),
    (R.ButtonText, R.Button), (R.PlaceholderText, R.Window), (R.PlaceholderText, R.Base),
    (R.PlaceholderText, R.AlternateBase), (R.HighlightedText, R.Highlight), (R.Link, R.Base),
    (R.Link, R.Window), (R.ToolTipText, R.ToolTipBase),
]


def luminance(color: QColor) -> float:
    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(color.redF()) + 0.7152 * channel(color.greenF()) + 0.0722 * channel(color.blueF())


def over(color: QColor, background: QColor) -> QColor:
    """A half-transparent colour as it shows on its background."""
    alpha = color.alphaF()
    mixed = [alpha * a + (1 - alpha) * b for a, b in zip(color.getRgbF()[:3], background.getRgbF()[:3])]
    return QColor.fromRgbF(*mixed)


def contrast(text: QColor, background: QColor) -> float:
    lighter, darker = sorted((luminance(over(text, background)), luminance(background)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def test_the_ratio_is_wcags() -> None:
    assert contrast(QColor("#000000"), QColor("#ffffff")) == pytest.approx(21.0)
    assert contrast(QColor("#777777"), QColor("#ffffff")) == pytest.approx(4.48, abs=0.01)  # the well-known grey just under AA
    assert contrast(QColor(0, 0, 0, 128), QColor("#efefef")) < AA_BODY  # Fusion's own hint grey: why the light palette is fixed


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_palette_text_pairs_meet_aa(qapp, dark: bool) -> None:
    palette = dark_palette() if dark else light_palette()
    low = [(text.name, background.name, round(contrast(palette.color(text), palette.color(background)), 2))
           for text, background in PAIRS if contrast(palette.color(text), palette.color(background)) < AA_BODY]
    assert low == []


@pytest.fixture
def app_palette(qapp) -> Iterator[Callable[[QPalette], None]]:  # type: ignore[no-untyped-def]
    """Set the application's palette for one test (the style sheet's palette(...) reads it), then put it back."""
    saved = QPalette(qapp.palette())
    yield qapp.setPalette
    qapp.setPalette(saved)


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_style_sheet_colours_meet_aa(qtbot, app_palette, dark: bool) -> None:  # type: ignore[no-untyped-def]
    palette = dark_palette() if dark else light_palette()
    app_palette(palette)
    container = QWidget()
    qtbot.addWidget(container)
    send = QPushButton("Send")
    send.setProperty("accent", True)
    hint, error = QLabel("12 tok/s"), QLabel("The model failed to load")
    hint.setProperty("role", "hint")
    error.setProperty("role", "error")
    layout = QVBoxLayout(container)
    for widget in (send, hint, error):
        layout.addWidget(widget)
    container.setStyleSheet(style_sheet(dark))
    for widget in (container, send, hint, error):
        widget.ensurePolished()
    window = palette.color(R.Window)
    ratios = {
        "send": contrast(send.palette().color(R.ButtonText), send.palette().color(R.Button)),
        "hint": contrast(hint.palette().color(R.WindowText), window),
        "error": contrast(error.palette().color(R.WindowText), window),
        "find match": contrast(QColor(MATCH_TEXT), QColor(MATCH_BACKGROUND)),
        "find current": contrast(QColor(MATCH_TEXT), QColor(CURRENT_BACKGROUND)),
    }
    assert send.palette().color(R.Button).name() != window.name()  # the style sheet was applied
    assert {name: round(ratio, 2) for name, ratio in ratios.items() if ratio < AA_BODY} == {}
