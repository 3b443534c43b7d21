"""The keyboard focus order: Tab goes top to bottom, left to right, as the widgets are seen.

Qt orders the focus chain by creation, and a widget made later (a message card, a code block that
streamed in) lands at the end of the window's chain, after the sidebar and the status bar. A
composite view (a chat tab) therefore computes its order when Tab is pressed instead: its groups
in the order given, each group's stops sorted by where they are on screen.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QComboBox, QWidget


def _stops_at(widget: QWidget) -> bool:
    if not (widget.focusPolicy() & Qt.FocusPolicy.TabFocus) or not widget.isVisible() or not widget.isEnabled():
        return False
    if widget.focusProxy() is not None:
        return False  # its proxy is the stop
    parent = widget.parentWidget()
    return not isinstance(parent, (QAbstractSpinBox, QComboBox))  # their own editor: the box is the stop


def tab_stops(groups: Sequence[QWidget]) -> list[QWidget]:
    """Where Tab stops in `groups`, in their order; inside a group as seen: a widget before what it
    holds, side by side widgets left to right, stacked ones top to bottom."""
    return [stop for group in groups if group.isVisible() for stop in _stops_in(group)]


def _stops_in(widget: QWidget) -> list[QWidget]:
    stops = [widget] if _stops_at(widget) else []
    children = [child for child in widget.children()
                if isinstance(child, QWidget) and not child.isWindow() and child.isVisible()]
    for child in _as_read(children):
        stops += _stops_in(child)
    return stops


def _as_read(widgets: list[QWidget]) -> list[QWidget]:
    """Siblings in reading order: rows top to bottom (widgets whose heights overlap share a row), each left to right."""
    rows: list[list[QWidget]] = []
    row_bottom = -1
    for widget in sorted(widgets, key=lambda widget: widget.geometry().top()):
        if not rows or widget.geometry().top() > row_bottom:
            rows.append([])
        rows[-1].append(widget)
        row_bottom = max(row_bottom, widget.geometry().bottom()) if len(rows[-1]) > 1 else widget.geometry().bottom()
    return [widget for row in rows for widget in sorted(row, key=lambda widget: widget.geometry().left())]


def enter_focus(groups: Sequence[QWidget], forward: bool) -> None:
    """Focus reached the owner itself from outside: on to its first stop (Tab) or its last (Shift+Tab)."""
    stops = tab_stops(groups)
    if stops:
        stops[0 if forward else -1].setFocus(Qt.FocusReason.TabFocusReason if forward else Qt.FocusReason.BacktabFocusReason)


def step_focus(owner: QWidget, groups: Sequence[QWidget], forward: bool) -> bool:
    """Move the focus to the next / previous stop of `owner`'s `groups`; past the last (first) one, to the
    first focusable widget outside `owner` in the window's chain. False when the focus is not in `groups`."""
    stops = tab_stops(groups)
    focused = QApplication.focusWidget()
    if focused not in stops:
        return False
    index = stops.index(focused) + (1 if forward else -1)
    reason = Qt.FocusReason.TabFocusReason if forward else Qt.FocusReason.BacktabFocusReason
    if 0 <= index < len(stops):
        stops[index].setFocus(reason)
        return True
    widget = owner.nextInFocusChain() if forward else owner.previousInFocusChain()
    while widget is not None and widget is not owner:
        if not owner.isAncestorOf(widget) and _stops_at(widget):
            widget.setFocus(reason)
            return True
        widget = widget.nextInFocusChain() if forward else widget.previousInFocusChain()
    return False
