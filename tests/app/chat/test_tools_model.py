"""End to end: the bundled model, made to call `add` (tool_choice naming it), the real window, a real MCP server.

Under "required" the model picks one of the offered tools itself, and which one follows any change to
the test server's tool list; naming the tool makes the call's name certain, its arguments still the
model's own under the schema's grammar. Nothing here rests on the model's words: that its arguments
fit the tool's schema, that the server's result for exactly those arguments goes back to the model,
and that the answer goes on after it.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from PySide6.QtCore import Qt

from app.chat.tool_card import ToolCallCard
from engine.tools.config import config_text
from tests.app.helpers import LONG, wait_restored
from tests.engine.tools.conftest import mcp_framed, stdio_server


@pytest.mark.slow
def test_the_model_calls_add_the_user_allows_it_and_the_answer_goes_on(qtbot, make_window, settings_dir: Path,
                                                                       tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings_dir.mkdir(parents=True, exist_ok=True)
    (settings_dir / "mcp.json").write_text(config_text((stdio_server(tmp_path),)))
    window = make_window(max_new_tokens=120)
    wait_restored(qtbot, window)
    tab = window.current_tab()
    tab.chat_tools.tool_choice = "add"
    tab.input.setPlainText("Use the add tool to add 2 and 3.")
    tab.send()
    qtbot.waitUntil(lambda: bool(tab.view.findChildren(ToolCallCard)), timeout=LONG * 3)
    cards, calls = tab.view.findChildren(ToolCallCard), tab.messages[1].tool_calls
    assert len(cards) == len(calls) >= 1 and all(card.waiting for card in cards)
    calling = [card for card in tab.view.cards() if card.role == "assistant"][0]
    assert "fixed by the format" in calling.footer.text(), "the named call's name and keys were read as forced tokens"
    schema = json.loads(window.tool_service.offered()["add"][1].parameters)
    expected = []
    for card, call in zip(cards, calls):
        assert call.name == card.name == "add" and card.server == "test"
        arguments = json.loads(call.arguments)
        jsonschema.validate(arguments, schema)
        assert card.arguments.text() == json.dumps(arguments, indent=2, ensure_ascii=False)
        expected.append(("tool", mcp_framed(str(float(arguments["a"]) + float(arguments["b"]))), call.id))
        qtbot.mouseClick(card.allow_button, Qt.MouseButton.LeftButton)
    results = slice(2, 2 + len(calls))
    qtbot.waitUntil(lambda: [m.role for m in tab.messages[results]] == ["tool"] * len(calls), timeout=LONG)
    assert [(m.role, m.content, m.tool_call_id) for m in tab.messages[results]] == expected
    # The follow-up turn ran ("auto" now): it answered, or made another call that waits for the user.
    qtbot.waitUntil(lambda: not tab.answering or len(tab.view.findChildren(ToolCallCard)) > len(calls), timeout=LONG * 3)
    assert tab.messages[2 + len(calls)].role == "assistant"
