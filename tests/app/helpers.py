"""Driving a window's tabs the way a user does, shared by the window, history and settings tests."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.chat.find_bar import FindBar
from app.chat.markdown_view import MessageBrowser
from app.chat.message_list import Entry, MessageList
from app.chat.tab import ChatTab
from app.window.mainwindow import MainWindow

LONG = 60_000


def type_and_send(qtbot, tab: ChatTab, text: str) -> None:  # type: ignore[no-untyped-def]
    qtbot.keyClicks(tab.input, text)
    qtbot.keyClick(tab.input, Qt.Key.Key_Return)


def send_and_wait(qtbot, tab: ChatTab, text: str) -> str:  # type: ignore[no-untyped-def]
    """Send `text` and wait for the whole answer; returns it."""
    tab.input.setPlainText(text)
    tab.send()
    qtbot.waitUntil(lambda: not tab.answering and tab.messages and tab.messages[-1].role == "assistant", timeout=LONG)
    return tab.messages[-1].content


def long_answers(window: MainWindow) -> None:
    """Answers that run until stopped, so a test can act while they stream."""
    window.default_sampling = replace(window.default_sampling, max_new_tokens=400, ignore_eos=True)


def answer_text(tab: ChatTab) -> str:
    cards = [card for card in tab.view.cards() if card.role == "assistant"]
    return cards[-1].browser.toPlainText() if cards else ""


def wait_restored(qtbot, window: MainWindow) -> None:  # type: ignore[no-untyped-def]
    qtbot.waitUntil(lambda: window.history_ui.ready, timeout=LONG)


def conversation(tab: ChatTab) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in tab.messages]


def monospace_fragments(browser: MessageBrowser) -> list[str]:
    """The text the browser shows in a monospace font, fragment by fragment."""
    found, block = [], browser.document().begin()
    while block.isValid():
        fragments = block.begin()
        while not fragments.atEnd():
            fragment = fragments.fragment()
            if "monospace" in (fragment.charFormat().fontFamilies() or []):
                found.append(fragment.text())
            fragments += 1
        block = block.next()
    return found


def transcript_with_find(qtbot, entries: list[Entry], height: int, active: bool = False):  # type: ignore[no-untyped-def]
    """A transcript with its find bar above it, 600 px wide, shown (and active, for shortcuts such as F3)."""
    host = QWidget()
    view = MessageList(host)
    bar = FindBar(view, host)
    layout = QVBoxLayout(host)
    layout.addWidget(bar)
    layout.addWidget(view)
    view.set_messages(entries)
    qtbot.addWidget(host)
    host.resize(600, height)
    host.show()
    qtbot.waitExposed(host)
    if active:
        host.activateWindow()
        qtbot.waitUntil(host.isActiveWindow)
    return host, view, bar
