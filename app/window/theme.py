"""Light and dark palettes, and the few style rules the chat view needs.

Colours come from the palette (`palette(...)` in the style sheet) so every
rule works in both; only the Fusion style draws a custom palette the same on
every OS, so a forced theme switches to it.
"""

from __future__ import annotations

from typing import Literal

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory

Theme = Literal["system", "light", "dark"]

STYLE_SHEET = """
QFrame#userMessage { background: palette(alternate-base); border-radius: 8px; }
QFrame#assistantMessage { background: palette(base); border: 1px solid palette(midlight); border-radius: 8px; }
QFrame#errorMessage { background: rgba(220, 38, 38, 40); border: 1px solid rgb(220, 38, 38); border-radius: 8px; }
QWidget#messageListContent { background: palette(window); }
QLabel#messageRole { font-weight: bold; }
QFrame#engineBanner { background: rgba(220, 38, 38, 40); border: 1px solid rgb(220, 38, 38); }
QFrame#userMessage:focus, QFrame#assistantMessage:focus, QFrame#errorMessage:focus, QFrame#toolMessage:focus {
    border: 2px solid palette(highlight); }
"""
# resources/style.qss's error red is dark enough for a light window; on a dark one it needs to be light (WCAG AA).
DARK_STYLE_SHEET = """
QLabel[role="error"], QLabel#apiIndicator[state="error"] { color: #f28b82; }
"""
# Fusion's light palette, where its colours miss WCAG AA's 4.5:1 for text: the hints' grey (half-transparent
# black, ~4.2:1 on the window) and white text on the selection's blue (~3.7:1).
_LIGHT_FIXES = {
    QPalette.ColorRole.PlaceholderText: "#5f6368",
    QPalette.ColorRole.Highlight: "#2563eb",
}

_DARK = {
    QPalette.ColorRole.Window: "#202124",
    QPalette.ColorRole.WindowText: "#e8eaed",
    QPalette.ColorRole.Base: "#17181a",
    QPalette.ColorRole.AlternateBase: "#2d2f33",
    QPalette.ColorRole.ToolTipBase: "#2d2f33",
    QPalette.ColorRole.ToolTipText: "#e8eaed",
    QPalette.ColorRole.PlaceholderText: "#9aa0a6",
    QPalette.ColorRole.Text: "#e8eaed",
    QPalette.ColorRole.Button: "#2d2f33",
    QPalette.ColorRole.ButtonText: "#e8eaed",
    QPalette.ColorRole.BrightText: "#ffffff",
    QPalette.ColorRole.Light: "#45474b",
    QPalette.ColorRole.Midlight: "#3a3c40",
    QPalette.ColorRole.Mid: "#5f6368",
    QPalette.ColorRole.Dark: "#111214",
    QPalette.ColorRole.Shadow: "#000000",
    QPalette.ColorRole.Highlight: "#2563eb",  # white on it: 5.2:1
    QPalette.ColorRole.HighlightedText: "#ffffff",
    QPalette.ColorRole.Link: "#8ab4f8",
    QPalette.ColorRole.LinkVisited: "#c58af9",
}


def dark_palette() -> QPalette:
    palette = QPalette()
    for role, color in _DARK.items():
        palette.setColor(role, QColor(color))
    disabled = QColor("#7f8388")
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText, QPalette.ColorRole.WindowText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    return palette


def light_palette() -> QPalette:
    style = QStyleFactory.create("Fusion")
    palette = style.standardPalette() if style is not None else QPalette()
    for role, color in _LIGHT_FIXES.items():
        palette.setColor(QPalette.ColorGroup.Active, role, QColor(color))
        palette.setColor(QPalette.ColorGroup.Inactive, role, QColor(color))
    return palette


def is_dark(palette: QPalette) -> bool:
    """Light text on a dark window."""
    return palette.color(QPalette.ColorRole.WindowText).lightness() > palette.color(QPalette.ColorRole.Window).lightness()


def style_sheet(dark: bool) -> str:
    """The whole application style sheet for a light or a dark palette."""
    return _shared_style_sheet() + STYLE_SHEET + (DARK_STYLE_SHEET if dark else "")


def apply_theme(app: QApplication, theme: Theme = "system") -> None:
    """Install the style sheet and, unless "system", a forced light or dark palette."""
    if theme != "system":
        app.setStyle("Fusion")
        app.setPalette(dark_palette() if theme == "dark" else light_palette())
    app.setStyleSheet(style_sheet(is_dark(app.palette())))


def _shared_style_sheet() -> str:
    """resources/style.qss: the input box, accent buttons, hints and errors."""
    try:
        import resources

        return resources.stylesheet() + "\n"
    except (ImportError, OSError):  # a broken install still gets a usable window
        return ""
