"""The finishing details of the tool cards: what a status keeps saying, which call a result answers, the fold.

The same scripted engine and SDK-written stdio server as tests/app/chat/test_tools.py (its fixtures).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from engine.protocol import ToolCall
from tests.app.chat import test_tools
from tests.app.helpers import LONG, wait_restored
from tests.engine.tools.conftest import mcp_framed

# test_tools.py's fixtures (the one started server of this module, the window whose mcp.json names it)
tool_folder, shared_manager, tools_window = test_tools.tool_folder, test_tools.shared_manager, test_tools.tools_window
_ask, ADD, _call_cards, _results = test_tools._ask, test_tools.ADD, test_tools._call_cards, test_tools._results


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


def test_two_calls_of_one_tool_in_one_answer_say_which_call_each_result_answers(qtbot, tools_window) -> None:  # type: ignore[no-untyped-def]
    window = tools_window()
    wait_restored(qtbot, window)
    bridge = window.bridge
    tab = _ask(qtbot, window, "What are 2 + 3 and 7 + 8?")
    bridge.call_tools(tab.chat_id, ToolCall("call_a", "add", '{"a": 2, "b": 3}'),
                      ToolCall("call_b", "add", '{"a": 7, "b": 8}'), ToolCall("call_c", "sleep", '{"seconds": 0}'))
    first, second, other = _call_cards(tab)
    titles = ["Tool call: add (call 1 of 2: a=2, b=3)  ·  server test",
              "Tool call: add (call 2 of 2: a=7, b=8)  ·  server test", "Tool call: sleep  ·  server test"]
    assert [first.title.text(), second.title.text(), other.title.text()] == titles
    for card in (second, other, first):  # allowed out of order: the results still follow the calls' order
        qtbot.mouseClick(card.allow_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(bridge.submitted) == 2, timeout=LONG)
    results = ["Tool result: add (call 1 of 2: a=2, b=3)", "Tool result: add (call 2 of 2: a=7, b=8)",
               "Tool result: sleep"]
    assert [(card.title.text(), card.text()) for card in _results(tab)] == list(zip(results, [mcp_framed("5.0"), mcp_framed("15.0"), mcp_framed("slept 0.0", "sleep")]))
    bridge.answer(tab.chat_id, "5 and 15.")
    window.close()

    again = tools_window()
    wait_restored(qtbot, again)
    restored = again.current_tab()
    assert [card.title.text() for card in _call_cards(restored)] == titles
    assert [card.title.text() for card in _results(restored)] == results


def test_a_folded_result_is_cut_at_a_line_and_its_ellipsis_never_follows_a_full_stop(qtbot, tools_window, tool_folder) -> None:  # type: ignore[no-untyped-def]
    days = "\n".join(f"The shop opens at {hour} on {day}." for hour, day in
                     [(8, "Monday"), (9, "Friday"), (10, "Saturday"), (11, "Sunday"), (12, "holidays")])
    (tool_folder / "hours.txt").write_text(days + "\n")
    (tool_folder / "long.txt").write_text("It rains. " * 60)  # one line longer than the preview
    window = tools_window()
    wait_restored(qtbot, window)
    bridge = window.bridge
    tab = _ask(qtbot, window, "When does the shop open?")
    bridge.call_tools(tab.chat_id, ToolCall("call_h", "read_file", '{"name": "hours.txt"}'),
                      ToolCall("call_l", "read_file", '{"name": "long.txt"}'))
    for card in _call_cards(tab):
        qtbot.mouseClick(card.allow_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(bridge.submitted) == 2, timeout=LONG)
    hours, rain = _results(tab)
    assert hours.folded and hours.result.text() == "\n".join(days.splitlines()[:4]) + "\n…"  # "…" on a line of its own
    assert not hours.show_all.isHidden()
    assert rain.result.text().endswith("It rains. …") and len(rain.result.text()) <= 402
    assert ".…" not in hours.result.text() + rain.result.text()
    hours.show_all.click()
    assert hours.result.text() == days + "\n"


def test_regenerate_after_a_call_reuses_its_result_and_a_new_call_asks_again(qtbot, tools_window, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    window = tools_window()
    wait_restored(qtbot, window)
    bridge = window.bridge
    tab = _ask(qtbot, window)
    bridge.call_tools(tab.chat_id, ADD)
    qtbot.mouseClick(_call_cards(tab)[0].allow_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(bridge.submitted) == 2, timeout=LONG)
    bridge.answer(tab.chat_id, "It is 5.")
    calls: list[tuple[object, ...]] = []
    service = window.tool_service
    original = service.call

    def recorded(*args: Any) -> Any:
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(service, "call", recorded)
    tab.regenerate()
    qtbot.waitUntil(lambda: len(bridge.submitted) == 3, timeout=LONG)
    sent = bridge.submitted[-1][1]
    assert [(m.role, m.content) for m in sent[-3:]] == [("user", "What is 2 + 3?"), ("assistant", ""), ("tool", mcp_framed("5.0"))]
    assert calls == [], "the answer is asked again from the stored result: the tool does not run again"
    again = ToolCall("call_again", "add", '{"a": 2, "b": 3}')
    bridge.call_tools(tab.chat_id, again)  # the new answer calls the tool once more: that call asks first
    waiting = [card for card in _call_cards(tab) if card.waiting]
    assert len(waiting) == 1 and not waiting[0].allow_button.isHidden() and calls == []
    assert len(bridge.submitted) == 3, "nothing is sent before the user answers the card"
    qtbot.mouseClick(waiting[0].allow_button, Qt.MouseButton.LeftButton)  # allowed: now it runs, once
    qtbot.waitUntil(lambda: len(bridge.submitted) == 4, timeout=LONG)
    assert [(server, tool) for _, server, tool, _ in calls] == [("test", "add")]


def test_calls_that_wait_for_the_person_are_announced_once_and_always_allowed_ones_are_not(
        qtbot, tools_window, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A screen reader's user hears that the answer stopped for them (nothing runs until they answer), once per
    answer, naming the tools; a call that runs by itself needs no word."""
    from PySide6.QtGui import QAccessible, QAccessibleAnnouncementEvent

    said: list[tuple[str, Any]] = []
    original = QAccessible.updateAccessibility

    def spy(event: Any) -> None:
        if isinstance(event, QAccessibleAnnouncementEvent):
            said.append((event.message(), event.object()))
        original(event)

    monkeypatch.setattr(QAccessible, "updateAccessibility", spy)
    window = tools_window()
    wait_restored(qtbot, window)
    bridge = window.bridge
    tab = _ask(qtbot, window, "What are 2 + 3 and 7 + 8?")
    said.clear()
    bridge.call_tools(tab.chat_id, ToolCall("call_a", "add", '{"a": 2, "b": 3}'),
                      ToolCall("call_b", "add", '{"a": 7, "b": 8}'), ToolCall("call_c", "sleep", '{"seconds": 0}'))
    first = _call_cards(tab)[0]
    assert said == [("add, sleep: 3 tool calls waiting for you. Allow or Deny is on the call's card.", first)]
    for card in _call_cards(tab):
        qtbot.mouseClick(card.always_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(bridge.submitted) == 2, timeout=LONG)
    said.clear()
    bridge.call_tools(tab.chat_id, ToolCall("call_d", "add", '{"a": 1, "b": 1}'))  # always allowed now: runs
    qtbot.waitUntil(lambda: len(bridge.submitted) == 3, timeout=LONG)
    assert not [message for message, _ in said if "waiting" in message]
    bridge.answer(tab.chat_id, "Done.")


def test_answer_aloud_says_after_the_answers_words_that_a_call_waits(qtbot, tools_window, voice_model,  # type: ignore[no-untyped-def]
                                                                     monkeypatch) -> None:
    """In a spoken conversation nobody may look at the screen: the reading of an answer that stops at a call
    waiting for the person ends with that, in the real voice, after the answer's own words."""
    from app.voice import read_aloud
    from tests.app.voice.test_read_aloud import RecordingOut

    heard: list[str] = []
    real_speak = read_aloud.speak

    def listened(voice: Any, pieces: Any, speed: float) -> Any:
        def recorded() -> Any:
            for piece in pieces:
                heard.append(piece)
                yield piece
        return real_speak(voice, recorded(), speed)

    monkeypatch.setattr(read_aloud, "speak", listened)
    window = tools_window()
    wait_restored(qtbot, window)
    window.settings.set("voice.tts_voice", voice_model)
    bridge, tab = window.bridge, window.current_tab()
    out = RecordingOut()
    tab.read_aloud._make_out = lambda: out
    qtbot.mouseClick(tab.answer_aloud.switch, Qt.MouseButton.LeftButton)
    tab = _ask(qtbot, window, "What is 2 + 3?")
    bridge.token_received.emit(tab.chat_id, "Let me add them.")
    bridge.call_tools(tab.chat_id, ToolCall("call_a", "add", '{"a": 2, "b": 3}'))
    qtbot.waitUntil(lambda: len(out.played) >= 2, timeout=60_000)
    spoken = "".join(heard)
    assert spoken.index("Let me add them.") < spoken.index("add: 1 tool call waiting for you.")
    assert tab.answering and tab.read_aloud.reading, "the reading goes on into the answer after the call"
    qtbot.mouseClick(_call_cards(tab)[0].deny_button, Qt.MouseButton.LeftButton)
    bridge.answer(tab.chat_id, "I did not add them.")
    qtbot.waitUntil(lambda: not tab.read_aloud.reading, timeout=60_000)
    assert "I did not add them." in "".join(heard)
