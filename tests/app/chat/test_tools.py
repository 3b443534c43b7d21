"""MCP tools in the real window: a scripted engine ends its turn in tool calls, a real stdio MCP server runs them.

The engine is scripted (its parser's events are the shared TurnFinished.tool_calls); the server
is the SDK-written one of tests/engine/tools, started once per module and shared by the windows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.chat.tab import ChatTab
from app.chat.tool_card import ToolCallCard, ToolResultCard
from app.chat.tool_round import DECLINED, INTERRUPTED, STOPPED
from app.tools.service import ToolService
from engine.protocol import ToolCall
from engine.tools.builtin.base import framed_text
from engine.tools.config import config_text
from engine.tools.manager import ToolManager
from tests.app.helpers import LONG, wait_restored
from tests.engine.tools.conftest import mcp_framed, stdio_server

ADD = ToolCall("call_add", "add", '{"a": 2, "b": 3}')


@pytest.fixture(scope="module")
def tool_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tool_files")


@pytest.fixture(scope="module")
def shared_manager(tool_folder: Path) -> Iterator[ToolManager]:
    manager = ToolManager([stdio_server(tool_folder)])
    yield manager
    manager.shutdown()


@pytest.fixture
def tools_window(scripted_window, settings_dir: Path, tool_folder: Path, shared_manager: ToolManager,
                 monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """A scripted window whose mcp.json names the test server; every window uses the one started server."""
    settings_dir.mkdir(parents=True, exist_ok=True)
    (settings_dir / "mcp.json").write_text(config_text((stdio_server(tool_folder),)))
    monkeypatch.setattr(ToolService, "_ensure_manager", lambda self: shared_manager)
    monkeypatch.setattr(ToolService, "shutdown", lambda self: None)  # the module's server outlives each window
    return scripted_window


def _ask(qtbot, window, text: str = "What is 2 + 3?") -> ChatTab:  # type: ignore[no-untyped-def]
    """Send `text` and wait for its Submit (the first one waits for the server to be listed)."""
    tab = window.current_tab()
    count = len(window.bridge.submitted)
    tab.input.setPlainText(text)
    tab.send()
    qtbot.waitUntil(lambda: len(window.bridge.submitted) > count, timeout=LONG)
    return tab


def _call_cards(tab: ChatTab) -> list[ToolCallCard]:
    return tab.view.findChildren(ToolCallCard)


def _results(tab: ChatTab) -> list[ToolResultCard]:
    return [card for card in tab.view.cards() if isinstance(card, ToolResultCard)]


def test_the_card_waits_and_allow_runs_add_and_the_chat_goes_on_while_another_tab_streams(qtbot, tools_window) -> None:  # type: ignore[no-untyped-def]
    window = tools_window()
    wait_restored(qtbot, window)
    bridge = window.bridge
    tab = _ask(qtbot, window)
    assert "add" in [spec.name for spec in bridge.tools[-1]]
    assert json.loads(next(s for s in bridge.tools[-1] if s.name == "add").parameters)["required"] == ["a", "b"]
    bridge.call_tools(tab.chat_id, ADD)
    (card,) = _call_cards(tab)
    assert card.waiting and card.allow_button.isHidden() is False and card.deny_button.isHidden() is False
    assert card.title.text() == "Tool call: add  ·  server test"
    assert card.arguments.text() == json.dumps({"a": 2, "b": 3}, indent=2)
    assert len(bridge.submitted) == 1 and _results(tab) == [] and tab.answering  # nothing ran

    other = window.new_chat()  # a second chat answers while the first waits on its tool
    other.input.setPlainText("Hello")
    other.send()
    bridge.answer(other.chat_id, "Hi ", "there.")
    assert not other.answering and other.messages[-1].content == "Hi there."
    assert card.waiting

    window.select_tab(tab)
    qtbot.mouseClick(card.allow_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(bridge.submitted) == 3, timeout=LONG)
    sent = bridge.submitted[-1][1]
    assert (sent[-2].role, sent[-2].tool_calls) == ("assistant", (ADD,))
    assert (sent[-1].role, sent[-1].content, sent[-1].tool_call_id, sent[-1].name) == ("tool", mcp_framed("5.0"), "call_add", "add")
    assert card.state == "done" and card.allow_button.isHidden()
    assert [result.text() for result in _results(tab)] == [mcp_framed("5.0")]
    (result,) = _results(tab)
    assert result.result.text() == "5.0" and not result.framing.isHidden()  # the words, and what the model was told
    assert result.framing.text() == 'Given to the model as untrusted data from the MCP server "test" (its tool add).'

    bridge.answer(tab.chat_id, "It is 5.")
    assert [m.role for m in tab.messages] == ["user", "assistant", "tool", "assistant"] and not tab.answering


def test_deny_tells_the_model_the_user_declined(qtbot, tools_window) -> None:  # type: ignore[no-untyped-def]
    window = tools_window()
    wait_restored(qtbot, window)
    tab = _ask(qtbot, window)
    window.bridge.call_tools(tab.chat_id, ADD)
    (card,) = _call_cards(tab)
    qtbot.mouseClick(card.deny_button, Qt.MouseButton.LeftButton)
    assert card.state == "declined"
    tool_message = window.bridge.submitted[-1][1][-1]
    assert (tool_message.role, tool_message.content, tool_message.tool_call_id) == ("tool", DECLINED, "call_add")


def test_always_allow_runs_the_next_call_without_asking(qtbot, tools_window) -> None:  # type: ignore[no-untyped-def]
    window = tools_window()
    wait_restored(qtbot, window)
    bridge = window.bridge
    tab = _ask(qtbot, window)
    bridge.call_tools(tab.chat_id, ADD)
    qtbot.mouseClick(_call_cards(tab)[0].always_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(bridge.submitted) == 2, timeout=LONG)
    assert window.settings.get("tools.always_allow") == ["test/add"]
    bridge.call_tools(tab.chat_id, ToolCall("call_2", "add", '{"a": 10, "b": 1}'))  # the next step of the answer
    second = _call_cards(tab)[-1]
    assert not second.waiting and second.allow_button.isHidden()  # no approval asked
    qtbot.waitUntil(lambda: len(bridge.submitted) == 3, timeout=LONG)
    assert bridge.submitted[-1][1][-1].content == mcp_framed("11.0")


def test_stop_cancels_a_running_call_and_ends_the_answer(qtbot, tools_window) -> None:  # type: ignore[no-untyped-def]
    window = tools_window()
    wait_restored(qtbot, window)
    bridge = window.bridge
    tab = _ask(qtbot, window)
    bridge.call_tools(tab.chat_id, ToolCall("call_sleep", "sleep", '{"seconds": 30}'))
    card = _call_cards(tab)[0]
    qtbot.mouseClick(card.allow_button, Qt.MouseButton.LeftButton)
    assert card.state == "running" and tab.stop_button.isEnabled()
    qtbot.mouseClick(tab.stop_button, Qt.MouseButton.LeftButton)
    assert card.state == "stopped" and not tab.answering
    assert (tab.messages[-1].role, tab.messages[-1].content) == ("tool", STOPPED)
    assert len(bridge.submitted) == 1 and bridge.cancelled == []  # the engine had no turn to cancel


def test_a_restart_restores_the_calls_and_a_waiting_one_as_interrupted(qtbot, tools_window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window = tools_window()
    wait_restored(qtbot, window)
    bridge = window.bridge
    tab = _ask(qtbot, window)
    bridge.call_tools(tab.chat_id, ADD)
    qtbot.mouseClick(_call_cards(tab)[0].allow_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(bridge.submitted) == 2, timeout=LONG)
    bridge.answer(tab.chat_id, "It is 5.")
    markdown, exported = tmp_path / "chat.md", tmp_path / "chat.json"
    window.history_ui.export_current("markdown", markdown)
    window.history_ui.export_current("json", exported)
    qtbot.waitUntil(lambda: markdown.exists() and exported.exists(), timeout=LONG)
    assert "**Tool call** `add`:\n\n```json\n{\"a\": 2, \"b\": 3}\n```" in markdown.read_text()
    assert f"## Tool result: add\n\n```\n{mcp_framed('5.0')}\n```" in markdown.read_text()
    document = json.loads(exported.read_text())
    system, *messages = document["messages"]  # the chat's system prompt leads the export
    assert system["role"] == "system"
    assert messages[1]["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"a": 2, "b": 3}'}
    assert messages[2] == {"role": "tool", "content": mcp_framed("5.0"), "tool_call_id": "call_add", "name": "add"}
    assert [m["finish_reason"] for m in document["hearth"]["messages"] if m["role"] == "tool"] == ["allowed"]
    _ask(qtbot, window, "And 7 + 8?")
    bridge.call_tools(tab.chat_id, ToolCall("call_wait", "add", '{"a": 7, "b": 8}'))  # left waiting at the close
    window.close()

    again = tools_window()
    wait_restored(qtbot, again)
    restored = again.current_tab()
    assert restored.chat_id == tab.chat_id
    assert [(m.role, m.content) for m in restored.messages] == [
        ("user", "What is 2 + 3?"), ("assistant", ""), ("tool", mcp_framed("5.0")), ("assistant", "It is 5."),
        ("user", "And 7 + 8?"), ("assistant", "")]
    assert restored.messages[1].tool_calls == (ADD,) and restored.messages[2].tool_call_id == "call_add"
    done, waiting = _call_cards(restored)
    assert done.state == "done" and waiting.state == "interrupted" and waiting.allow_button.isHidden()
    assert done.title.text() == waiting.title.text() == "Tool call: add  ·  server test"  # as they showed live
    assert again.bridge.submitted == []  # nothing ran or was sent by itself
    restored.input.setPlainText("Never mind.")
    restored.send()
    qtbot.waitUntil(lambda: bool(again.bridge.submitted), timeout=LONG)
    sent = again.bridge.submitted[-1][1]
    assert [(m.role, m.content) for m in sent[-3:]] == [("assistant", ""), ("tool", INTERRUPTED), ("user", "Never mind.")]


def test_a_big_result_is_cut_and_folded_and_a_crash_mid_call_is_an_error_the_chat_survives(qtbot, tools_window) -> None:  # type: ignore[no-untyped-def]
    window = tools_window()
    wait_restored(qtbot, window)
    bridge = window.bridge
    tab = _ask(qtbot, window, "Get the big text")
    bridge.call_tools(tab.chat_id, ToolCall("call_big", "big", "{}"))
    qtbot.mouseClick(_call_cards(tab)[-1].allow_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(bridge.submitted) == 2, timeout=LONG)
    sent = bridge.submitted[-1][1][-1].content
    assert framed_text(sent).startswith("x" * 16_000) and sent.count("x") == 16_000
    assert framed_text(sent).endswith("[The result was cut to the first 16,000 of its 1,048,576 characters.]")
    card, result = _call_cards(tab)[-1], _results(tab)[-1]
    assert "cut to the first 16,000" in card.status.text()
    assert result.folded and len(result.result.text()) < 500 and not result.show_all.isHidden()
    result.show_all.click()
    assert result.result.text() == framed_text(sent)  # the words; the frame is named above them

    bridge.call_tools(tab.chat_id, ToolCall("call_crash", "crash", "{}"))  # the next step: the server dies mid-call
    qtbot.mouseClick(_call_cards(tab)[-1].allow_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(bridge.submitted) == 3, timeout=LONG)
    assert "failed during the call of crash" in bridge.submitted[-1][1][-1].content
    assert _call_cards(tab)[-1].state == "error" and _results(tab)[-1].property("error") is True
    bridge.answer(tab.chat_id, "The tool broke.")
    assert not tab.answering and tab.messages[-1].content == "The tool broke."


def test_a_call_of_a_tool_not_offered_runs_nothing(qtbot, tools_window) -> None:  # type: ignore[no-untyped-def]
    window = tools_window()
    wait_restored(qtbot, window)
    tab = _ask(qtbot, window)
    window.bridge.call_tools(tab.chat_id, ToolCall("call_x", "rm_rf", "{}"))
    assert _call_cards(tab)[0].state == "unknown"
    assert window.bridge.submitted[-1][1][-1].content == "There is no tool named rm_rf; it did not run."


def test_stop_while_the_servers_start_drops_the_turn_and_nothing_is_sent_when_they_come_up(qtbot, tools_window) -> None:  # type: ignore[no-untyped-def]
    window = tools_window()
    wait_restored(qtbot, window)
    bridge, tab = window.bridge, window.current_tab()
    tab.input.setPlainText("What is 2 + 3?")
    tab.send()  # the server's tools are listed on the tools thread; the tab hears of it only from the event loop
    assert tab.answering and tab.stop_button.isEnabled() and bridge.submitted == []
    tab.stop_button.click()  # pressed before the event loop runs again: the listing cannot have arrived
    assert not tab.answering and not tab.stop_button.isEnabled() and tab.send_button.isEnabled()
    assert [card.role for card in tab.view.cards()] == ["user"]  # no answer card left waiting
    with qtbot.waitSignal(window.tool_service.tools_listed, timeout=LONG):
        pass  # the server came up: the readiness callbacks ran in that same slot
    assert bridge.submitted == [] and bridge.cancelled == []
    assert [(m.role, m.content) for m in tab.messages] == [("user", "What is 2 + 3?")]

    tab.regenerate()  # the tab is usable: the question is asked again, now with the tools
    assert len(bridge.submitted) == 1 and "add" in [spec.name for spec in bridge.tools[-1]]
    bridge.answer(tab.chat_id, "5.")
    assert not tab.answering and [m.role for m in tab.messages] == ["user", "assistant"]


def test_a_tab_closed_while_its_servers_start_sends_nothing_when_they_come_up(qtbot, tools_window) -> None:  # type: ignore[no-untyped-def]
    window = tools_window()
    wait_restored(qtbot, window)
    tab = window.current_tab()
    tab.input.setPlainText("What is 2 + 3?")
    tab.send()
    window.close_tab(tab)
    with qtbot.waitSignal(window.tool_service.tools_listed, timeout=LONG):
        pass  # the server came up: the readiness callbacks ran in that same slot
    assert window.bridge.submitted == []
