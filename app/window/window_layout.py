"""Where the window's parts sit: the engine banner over the chat tabs, and the status bar.

The window makes its parts and wires what they do; this only arranges them. The sidebar goes
beside the tabs later, in the box returned (app/window/sidebar_control.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtWidgets import QBoxLayout, QMainWindow, QVBoxLayout, QWidget


def arrange_window(window: QMainWindow, banner: QWidget, tabs: QWidget, status: Sequence[QWidget],
                   permanent: Sequence[QWidget]) -> QBoxLayout:
    """Lay `window` out: `banner` over `tabs`; the status bar's `status` on the left, `permanent` on the right.
    Returns the box the tabs sit in."""
    central = QWidget()
    layout = QVBoxLayout(central)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(0)
    layout.addWidget(banner)
    layout.addWidget(tabs, 1)
    window.setCentralWidget(central)
    bar = window.statusBar()
    for widget in status:
        bar.addWidget(widget)
    for widget in permanent:
        bar.addPermanentWidget(widget)
    return layout
