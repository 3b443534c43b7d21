"""The finishing details of the tool cards: what a status keeps saying, which call a result answers, the fold.

The same scripted engine and SDK-written stdio server as tests/app/chat/test_tools.py (its fixtures).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from app.chat.tool_card import ToolCallCard, ToolResultCard
from engine.protocol import ToolCall
from tests.app.chat.test_tools import _ask, shared_manager, tool_folder, tools_window  # noqa: F401 (fixtures)
from tests.app.helpers import LONG, wait_restored


def _call_cards(tab) -> list[ToolCallCard]:  # type: ignore[no-untyped-def]
    return tab.view.findChildren(ToolCallCard)


def _results(tab) -> list[ToolResultCard]:  # type: ignore[no-untyped-def]
    return [card for card in tab.view.cards() if isinstance(card, ToolResultCard)]


def test_a_call_that_ran_because_its_tool_is_always_allowed_keeps_saying_so_live_and_restored(qtbot, tools_window) -> None:  # type: ignore[no-untyped-def]
    window = tools_window()
    wait_restored(qtbot, window)
    bridge = window.bridge
    tab = _ask(qtbot, window)
    bridge.call_tools(tab.chat_id, ToolCall("call_1", "add", '{"a": 2, "b": 3}'))
    first = _call_cards(tab)[0]
    qtbot.mouseClick(first.allow_button, Qt.MouseButton.LeftButton)  # once: it asked, and is not "always"
    qtbot.waitUntil(lambda: len(bridge.submitted) == 2, timeout=LONG)
    assert first.status.text() == "Done."
    bridge.call_tools(tab.chat_id, ToolCall("call_2", "add", '{"a": 1, "b": 1}'))
    second = _call_cards(tab)[-1]
    qtbot.mouseClick(second.always_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(bridge.submitted) == 3, timeout=LONG)
    bridge.call_tools(tab.chat_id, ToolCall("call_3", "add", '{"a": 10, "b": 1}'))  # runs without asking
    third = _call_cards(tab)[-1]
    assert third.status.text() == "Running… · always allowed."
    qtbot.waitUntil(lambda: len(bridge.submitted) == 4, timeout=LONG)
    assert second.status.text() == third.status.text() == "Done · always allowed."
    bridge.answer(tab.chat_id, "It is 11.")
    window.close()

    again = tools_window()
    wait_restored(qtbot, again)
    restored = [card.status.text() for card in _call_cards(again.current_tab())]
    assert restored == ["Done.", "Done · always allowed.", "Done · always allowed."]
