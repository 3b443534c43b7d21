"""The window's tool round on the family fixtures: a real MCP server's tool, called in the family's own
format (Qwen3's `<tool_call>`, Qwen3-Coder's XML, Llama 3.1's bare JSON, gpt-oss's commentary channel,
Mistral Nemo's `[TOOL_CALLS]` list, Ministral 3's `[TOOL_CALLS]NAME[ARGS]` after its `[THINK]`, the R1
distill's DeepSeek markers, Gemma 4's own notation), shown on a card, allowed by the user, its result
sent back through the family's template, and the answer going on. Qwen2.5 (Qwen3's call, no thinking)
and Devstral (Ministral 3's call, no thinking) add no format of their own here and are left out: each
window round costs seconds.

The tool is named (tool_choice) and the thinking has a budget of a few tokens, as a user would set it:
what a random-weight model writes is then forced, so each step asserts on the call and its schema. The
tool is `add_small` (two integers from 0 to 99): under `add`'s unbounded numbers a random model writes
digits until max_tokens (Llama 3's vocabulary has a thousand digit tokens), and a call cut there is left
out of the answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from PySide6.QtCore import Qt

from app.chat.tool_card import ToolCallCard
from engine.protocol import TurnFinished, TurnStarted
from engine.tools.config import config_text
from tests.app.helpers import LONG, wait_restored
from tests.engine.tools.conftest import mcp_framed, stdio_server
from tests.families.build import family_model

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("family", ["qwen3", "llama3_1", "gpt_oss", "qwen3_coder", "r1_distill", "mistral_nemo",
                                    "ministral_reasoning", "gemma4"])
def test_the_window_calls_an_mcp_tool_in_the_familys_format_and_reads_its_result(
        qtbot, make_window, settings_dir: Path, tmp_path: Path, family: str) -> None:  # type: ignore[no-untyped-def]
    settings_dir.mkdir(parents=True, exist_ok=True)
    (settings_dir / "mcp.json").write_text(config_text((stdio_server(tmp_path),)))
    window = make_window(max_new_tokens=160, model_path=str(family_model(family)))
    wait_restored(qtbot, window)
    tab = window.current_tab()
    assert "tools" in window.bridge.model_info.capabilities
    if "reasoning" in window.bridge.model_info.capabilities:
        tab.think_control.budget_box.setValue(8)  # the user's budget: a random model would think on
    started: list[TurnStarted] = []
    window.bridge.turn_started.connect(started.append)
    finished: list[TurnFinished] = []
    window.bridge.turn_finished.connect(finished.append)
    tab.chat_tools.tool_choice = "add_small"
    tab.input.setPlainText("Use the add tool to add 2 and 3.")
    tab.send()
    qtbot.waitUntil(lambda: bool(tab.view.findChildren(ToolCallCard)) or not tab.answering, timeout=LONG * 3)
    assert len(tab.messages) >= 2, f"the turn kept no answer: {finished}"
    cards, calls = tab.view.findChildren(ToolCallCard), tab.messages[1].tool_calls
    assert len(cards) == len(calls) >= 1 and all(card.waiting for card in cards)  # the window takes parallel calls
    assert not tab.messages[1].content.strip(), "the calls are not also shown as text"
    schema = json.loads(window.tool_service.offered()["add_small"][1].parameters)
    expected = []
    for card, call in zip(cards, calls):
        assert call.name == card.name == "add_small" and card.server == "test"
        arguments = json.loads(call.arguments)
        jsonschema.validate(arguments, schema)
        expected.append(("tool", mcp_framed(str(arguments["a"] + arguments["b"]), "add_small"), call.id))
        qtbot.mouseClick(card.allow_button, Qt.MouseButton.LeftButton)
    results = slice(2, 2 + len(calls))
    qtbot.waitUntil(lambda: [m.role for m in tab.messages[results]] == ["tool"] * len(calls), timeout=LONG)
    assert [(m.role, m.content, m.tool_call_id) for m in tab.messages[results]] == expected
    # The follow-up turn: the conversation with the result, its prompt after the first turn's in the cache
    qtbot.waitUntil(lambda: len(started) == 2, timeout=LONG)
    first, second = started
    assert second.prompt_tokens > first.prompt_tokens and second.reused_tokens > 0
    qtbot.waitUntil(lambda: len(finished) == 2, timeout=LONG * 3)
    # What the random model wrote then is its own: an answer, a call (kept, its card waiting), or a call
    # cut by max_tokens (left out: nothing kept). The tab keeps exactly what the turn ended with.
    after = finished[1]
    kept = tab.messages[2 + len(calls) :]
    if after.text or after.reasoning or after.tool_calls:
        assert [(m.role, m.content, m.tool_calls) for m in kept] == [("assistant", after.text, after.tool_calls)]
    else:
        assert after.reason == "length" and kept == []
