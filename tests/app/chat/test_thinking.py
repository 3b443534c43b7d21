"""A reasoning model's thinking in the real window (scripted engine): it streams folded, opens, stays apart, comes back."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from app.chat.message_list import MessageCard
from app.chat.tab import ChatTab
from app.chat.thinking_block import duration_text, thinking_summary
from engine.protocol import TurnStats
from tests.app.helpers import LONG, answer_text, wait_restored
from tests.app.scripted_bridge import NO_STATS, model_info

THINKING_STATS = TurnStats(10, 0, 360, 0.1, 30.0, 13.0, reasoning_tokens=340, reasoning_s=12.0)


class FakeClock:
    """The seconds a test says have passed: the header's count never rests on the machine's speed."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _ask(qtbot, window, text: str = "What is 2 + 2?") -> tuple[ChatTab, FakeClock]:  # type: ignore[no-untyped-def]
    wait_restored(qtbot, window)
    tab = window.current_tab()
    clock = FakeClock()
    tab.thinking.clock = clock
    tab.input.setPlainText(text)
    tab.send()
    window.bridge.begin_turn(tab.chat_id)
    return tab, clock


def _answer_card(tab: ChatTab) -> MessageCard:
    return [card for card in tab.view.cards() if card.role == "assistant"][-1]


def test_the_block_streams_folded_counts_seconds_opens_and_ends_with_the_engines_numbers(qtbot, scripted_window) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    bridge = window.bridge
    tab, clock = _ask(qtbot, window)
    block = _answer_card(tab).thinking_block
    assert block.isHidden()  # nothing thought yet
    bridge.think(tab.chat_id, "Two plus ", "two")
    qtbot.waitUntil(lambda: block.text() == "Two plus two")
    assert block.header() == "Thinking… 0 s" and not block.isHidden()
    assert not block.is_open and block.body.isHidden()  # folded while it streams
    clock.now += 12.4
    qtbot.waitUntil(lambda: block.header() == "Thinking… 12 s")  # the tick counts on with no new text
    qtbot.mouseClick(block.toggle, Qt.MouseButton.LeftButton)
    assert block.is_open and not block.body.isHidden() and block.body.text() == "Two plus two"
    bridge.think(tab.chat_id, " makes four.")
    qtbot.waitUntil(lambda: block.body.text() == "Two plus two makes four.")  # open: it streams live
    bridge.token_received.emit(tab.chat_id, "The answer")
    clock.now += 5  # answering is not thinking: the clock stopped at the first answer token
    qtbot.waitUntil(lambda: answer_text(tab) == "The answer")
    assert block.header() == "Thought for 12 s" and "Two plus" not in answer_text(tab)
    bridge.token_received.emit(tab.chat_id, " is 4.")
    bridge.finish(tab.chat_id, "The answer is 4.", "Two plus two makes four.", stats=THINKING_STATS)
    assert block.header() == "Thought for 12 s, 340 tokens"  # the engine's count, once it has one
    qtbot.mouseClick(block.toggle, Qt.MouseButton.LeftButton)
    assert not block.is_open and block.body.isHidden()
    assert tab.messages[-1].content == "The answer is 4." and tab.messages[-1].reasoning == "Two plus two makes four."


def test_without_engine_numbers_the_window_measures_the_seconds(qtbot, scripted_window) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    tab, clock = _ask(qtbot, window)
    window.bridge.think(tab.chat_id, "Hmm.")
    clock.now += 3.0
    window.bridge.finish(tab.chat_id, "Yes.", "Hmm.", stats=NO_STATS)  # a remote server says nothing
    assert _answer_card(tab).thinking_block.header() == "Thought for 3 s"
    assert tab.last_reasoning_s == 3.0


def test_copy_answer_copies_the_answer_alone(qtbot, scripted_window) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    tab, _ = _ask(qtbot, window)
    window.bridge.think(tab.chat_id, "Secret scratch work.")
    window.bridge.token_received.emit(tab.chat_id, "Four.")
    window.bridge.finish(tab.chat_id, "Four.", "Secret scratch work.")
    card = _answer_card(tab)
    with qtbot.waitSignal(card.copied) as copied:
        card.copy_button.click()
    assert copied.args == ["Four."] and QGuiApplication.clipboard().text() == "Four."


def test_the_next_turn_sends_the_earlier_thinking_with_its_answer(qtbot, scripted_window) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    tab, _ = _ask(qtbot, window)
    window.bridge.answer(tab.chat_id, "Four.", reasoning=["Add them."])
    tab.input.setPlainText("And 3 + 3?")
    tab.send()
    messages = [m for m in window.bridge.submitted[-1][1] if m.role != "system"]
    assert [(m.role, m.content, m.reasoning) for m in messages] == [
        ("user", "What is 2 + 2?", ""), ("assistant", "Four.", "Add them."), ("user", "And 3 + 3?", "")]


def test_a_thinking_stopped_before_its_answer_is_kept(qtbot, scripted_window) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    tab, _ = _ask(qtbot, window)
    window.bridge.think(tab.chat_id, "Let me think about")
    window.bridge.finish(tab.chat_id, "", "Let me think about", reason="cancelled")
    card = _answer_card(tab)
    assert tab.messages[-1].reasoning == "Let me think about" and tab.messages[-1].content == ""
    assert card.thinking_block.text() == "Let me think about" and "stopped" in card.footer.text()
    assert tab.regenerate_button.isEnabled()


def test_thinking_and_its_numbers_are_restored_after_a_restart(qtbot, scripted_window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    tab, _ = _ask(qtbot, window, "Why is the sky blue?")
    window.bridge.think(tab.chat_id, "Rayleigh ", "scattering.")
    window.bridge.token_received.emit(tab.chat_id, "Short waves scatter more.")
    window.bridge.finish(tab.chat_id, "Short waves scatter more.", "Rayleigh scattering.", stats=THINKING_STATS)
    markdown, exported = tmp_path / "chat.md", tmp_path / "chat.json"
    window.history_ui.export_current("markdown", markdown)
    window.history_ui.export_current("json", exported)
    qtbot.waitUntil(lambda: markdown.exists() and exported.exists(), timeout=LONG)
    window.close()

    again = scripted_window()
    wait_restored(qtbot, again)
    restored = again.current_tab()
    assert restored.chat_id == tab.chat_id
    assert [(m.content, m.reasoning) for m in restored.messages] == [
        ("Why is the sky blue?", ""), ("Short waves scatter more.", "Rayleigh scattering.")]
    block = _answer_card(restored).thinking_block
    assert block.header() == "Thought for 12 s, 340 tokens" and not block.is_open
    assert block.text() == "Rayleigh scattering." and answer_text(restored) == "Short waves scatter more."
    assert "<details><summary>Thinking</summary>\n\nRayleigh scattering.\n\n</details>" in markdown.read_text(encoding="utf-8")
    messages = json.loads(exported.read_text(encoding="utf-8"))["messages"]
    assert messages[0]["role"] == "system"  # the chat's system prompt leads the export
    assert messages[2]["reasoning"] == "Rayleigh scattering."


def test_a_remote_style_thinking_keeps_its_measured_seconds_after_a_restart(qtbot, scripted_window) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    tab, clock = _ask(qtbot, window)
    window.bridge.think(tab.chat_id, "Counting.")
    clock.now += 7.0
    window.bridge.token_received.emit(tab.chat_id, "Four.")
    window.bridge.finish(tab.chat_id, "Four.", "Counting.", stats=NO_STATS)
    window.close()
    again = scripted_window()
    wait_restored(qtbot, again)
    assert _answer_card(again.current_tab()).thinking_block.header() == "Thought for 7 s"


def test_summaries_say_only_what_was_measured() -> None:
    assert thinking_summary(12.0, 340) == "Thought for 12 s, 340 tokens"
    assert thinking_summary(0.42, 1) == "Thought for under a second, 1 token"
    assert thinking_summary(0.0, 50) == "Thought: 50 tokens"
    assert thinking_summary(0.0, 0) == "Thinking" and thinking_summary(0.0, 0, interrupted=True) == "Thinking (cut short)"
    assert duration_text(125.0) == "2 min 5 s" and duration_text(0.6) == "1 s"


def test_a_model_without_thinking_shows_no_block(qtbot, scripted_window) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window(model_info())
    tab, _ = _ask(qtbot, window)
    window.bridge.token_received.emit(tab.chat_id, "Hi.")
    window.bridge.finish(tab.chat_id, "Hi.")
    assert _answer_card(tab).thinking_block.isHidden()
