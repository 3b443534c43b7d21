"""What a screen reader needs beyond names: a role for our own composite widgets, and spoken announcements.

Qt gives a QFrame the role "Border", which readers skip over; a widget that is really a list item
(a chat message) says so with the dynamic property `accessibleRole` (a QAccessible.Role value) and
the factory installed here gives it that role. `announce` tells the reader something happened that
has no focus change of its own (an answer finished), through QAccessibleAnnouncementEvent (Qt 6.8+).
"""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import (
    QAccessible,
    QAccessibleAnnouncementEvent,
    QAccessibleInterface,
)
from PySide6.QtWidgets import QAccessibleWidget, QWidget

ROLE_PROPERTY = "accessibleRole"
_installed = False


def _role_factory(_class_name: str, obj: QObject) -> QAccessibleInterface | None:
    role = obj.property(ROLE_PROPERTY) if isinstance(obj, QWidget) else None
    if role is None or not isinstance(obj, QWidget):
        return None  # Qt's own interface
    return QAccessibleWidget(obj, QAccessible.Role(role))


def install_role_factory() -> None:
    """Once per process: widgets with an `accessibleRole` property report that role."""
    global _installed
    if not _installed:
        QAccessible.installFactory(_role_factory)
        _installed = True


def set_role(widget: QWidget, role: QAccessible.Role) -> None:
    install_role_factory()
    widget.setProperty(ROLE_PROPERTY, role.value)


def announce(widget: QWidget, message: str, assertive: bool = False) -> QAccessibleAnnouncementEvent:
    """Have a screen reader say `message` (politely: after what it is saying now, unless `assertive`)."""
    event = QAccessibleAnnouncementEvent(widget, message)
    politeness = QAccessible.AnnouncementPoliteness
    event.setPoliteness(politeness.Assertive if assertive else politeness.Polite)
    QAccessible.updateAccessibility(event)
    return event
