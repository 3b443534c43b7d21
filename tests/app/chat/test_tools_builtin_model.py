"""End to end: the bundled model, made to call the built-in `search_chats` (tool_choice naming it), the real
window, the real tool service and history database.

The query is the model's own (under the tool's schema); what is checked is that the card shows exactly
those arguments, that nothing runs before Allow, that the result for exactly that query (the history's
own search, asked the same thing) goes back to the model, and that the answer goes on after it.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from PySide6.QtCore import Qt

from app.chat.tool_card import ToolCallCard
from engine.tools.builtin.base import run_safely
from tests.app.helpers import LONG, wait_restored


@pytest.mark.slow
def test_the_model_calls_search_chats_the_user_allows_it_and_the_history_s_result_goes_back(  # type: ignore[no-untyped-def]
        qtbot, make_window) -> None:
    window = make_window(max_new_tokens=80)
    wait_restored(qtbot, window)
    window.settings.set("tools.builtin_enabled", ["search_chats"])
    service = window.tool_service
    tab = window.current_tab()
    tab.chat_tools.tool_choice = "search_chats"
    tab.input.setPlainText("Search my chats for the kettle.")
    tab.send()
    qtbot.waitUntil(lambda: bool(tab.view.findChildren(ToolCallCard)), timeout=LONG * 3)
    cards, calls = tab.view.findChildren(ToolCallCard), tab.messages[1].tool_calls
    assert len(cards) == len(calls) >= 1 and all(card.waiting for card in cards)
    assert len(tab.messages) == 2  # nothing ran before the person allowed it
    schema = json.loads(service.offered()["search_chats"][1].parameters)
    tool = next(tool for tool in service.builtin.enabled(tab.chat_id) if tool.name == "search_chats")
    expected, states = [], []
    for card, call in zip(cards, calls):
        assert (call.name, card.name, card.server) == ("search_chats", "search_chats", "built-in")
        arguments = json.loads(call.arguments)
        jsonschema.validate(arguments, schema)
        assert card.arguments.text() == json.dumps(arguments, indent=2, ensure_ascii=False)
        result = run_safely(tool, call.arguments)  # the history as the call will find it
        expected.append(("tool", result.text, call.id))
        states.append("error" if result.is_error else "done")
    for card in cards:
        qtbot.mouseClick(card.allow_button, Qt.MouseButton.LeftButton)
    results = slice(2, 2 + len(calls))
    qtbot.waitUntil(lambda: [m.role for m in tab.messages[results]] == ["tool"] * len(calls), timeout=LONG)
    assert [(m.role, m.content, m.tool_call_id) for m in tab.messages[results]] == expected
    assert [card.state for card in cards] == states
    qtbot.waitUntil(lambda: not tab.answering or len(tab.view.findChildren(ToolCallCard)) > len(calls),
                    timeout=LONG * 3)
    assert tab.messages[2 + len(calls)].role == "assistant"
