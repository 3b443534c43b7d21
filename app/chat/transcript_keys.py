"""Keys that move through a chat's transcript: Alt+Up / Alt+Down step the focus from message to message.

A screen reader says each message as it gets the focus ("Assistant, 42 words", then its text), so
the transcript is read message by message without a mouse. From the input box Alt+Up goes to the
last message; Alt+Down past the last message comes back to the input.
"""

from __future__ import annotations

from PySide6.QtCore import QKeyCombination, Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QApplication, QWidget

from app.chat.message_card import MessageCard
from app.chat.message_list import MessageList


def install_message_keys(host: QWidget, view: MessageList, input_box: QWidget) -> None:
    """Alt+Up / Alt+Down anywhere in `host` (a chat tab)."""
    for key, step in ((Qt.Key.Key_Up, -1), (Qt.Key.Key_Down, 1)):
        keys = QKeySequence(QKeyCombination(Qt.KeyboardModifier.AltModifier, key))
        shortcut = QShortcut(keys, host, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        shortcut.activated.connect(lambda step=step: step_message_focus(view, input_box, step))


def step_message_focus(view: MessageList, input_box: QWidget, step: int) -> None:
    """The focus to the previous (-1) / next (+1) message; down past the last one, to the input box."""
    focused = QApplication.focusWidget()
    in_view = focused is not None and view.isAncestorOf(focused)
    if (in_view or step < 0) and not focus_message(view, step) and step > 0:
        input_box.setFocus(Qt.FocusReason.OtherFocusReason)


def focus_message(view: MessageList, step: int) -> bool:
    """Move the keyboard focus to the next (+1) or previous (-1) message card; from outside the list,
    -1 is the last card and +1 the first. False when there is no card that way (the caller's turn)."""
    cards = view.cards()
    focused = QApplication.focusWidget()
    current = next((card for card in cards if focused is not None and (focused is card or card.isAncestorOf(focused))), None)
    left = view.window_.left_with_focus
    if current is None and focused is view and isinstance(left, MessageCard) and left in cards:
        current = left  # the reader scrolled away from the card they were on: the keys go on from it
    if current is None:
        index = len(cards) - 1 if step < 0 else 0
    else:
        index = cards.index(current) + step
        if index < 0 and view.hidden_count():
            view.show_earlier()  # the reader goes on up into the messages not shown yet
            cards = view.cards()
            index = cards.index(current) + step
    if not 0 <= index < len(cards):
        return False
    view.reveal(cards[index])  # laid out first: a card far from the view waits hidden
    cards[index].setFocus(Qt.FocusReason.OtherFocusReason)
    view.ensureWidgetVisible(cards[index], 0, 0)
    return True
