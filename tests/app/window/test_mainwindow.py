"""The main window on the real engine and default model, driven the way a user drives it."""

from __future__ import annotations

import threading
from dataclasses import replace

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from engine.protocol import ChatError
from tests.app.helpers import answer_text, long_answers, type_and_send


def test_the_input_takes_text_while_the_model_loads_and_says_why_it_waits(qtbot, make_window) -> None:
    window = make_window(wait_for_model=False)
    tab = window.current_tab()
    seen_while_loading: list[tuple[bool, bool, str]] = []
    window.bridge.model_loading.connect(
        lambda *_: seen_while_loading.append((tab.input.isEnabled(), tab.model_ready, tab.reason.text())))
    assert not tab.model_ready and not tab.regenerate_button.isEnabled()
    with qtbot.waitSignal(window.bridge.model_loaded, timeout=60_000):
        window.show()
    enabled, ready, reason = seen_while_loading[0]
    assert enabled and not ready and reason.startswith("Loading SmolLM2-135M-Instruct.Q4_1.gguf")  # a send is queued
    assert tab.input.isEnabled() and tab.model_ready and tab.reason.isHidden()
    assert window.gauge.device_name == "CPU"


def test_two_tabs_answer_at_the_same_time(qtbot, make_window) -> None:
    window = make_window()
    # every answer runs to its 24 tokens: interleaving is counted on tokens the model cannot cut short
    window.default_sampling = replace(window.default_sampling, ignore_eos=True)
    order: list[str] = []
    finished: dict[str, str] = {}
    window.bridge.token_received.connect(lambda chat, _text: order.append(chat))
    window.bridge.turn_finished.connect(lambda event: finished.__setitem__(event.chat_id, event.text))
    first = window.current_tab()
    type_and_send(qtbot, first, "Name three colours.")
    qtbot.keyClick(window, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier)
    second = window.current_tab()
    assert second is not first and window.tabs.count() == 2
    type_and_send(qtbot, second, "Write one sentence about tea.")
    assert first.answering and second.answering
    assert window.tabs.is_busy(first) and not window.tabs.tabIcon(0).isNull()
    qtbot.waitUntil(lambda: not first.answering and not second.answering, timeout=120_000)
    switches = sum(1 for a, b in zip(order, order[1:]) if a != b)
    assert switches >= 4, "the two tabs' tokens should interleave"
    for tab in (first, second):
        assert [m.role for m in tab.messages] == ["user", "assistant"]
        assert answer_text(tab).strip() != "" and tab.messages[-1].content == finished[tab.chat_id]
        footer = tab.view.cards()[-1].footer.text()
        assert "tokens" in footer and "tok/s" in footer and "first token" in footer and "reused" in footer
        assert window.tabs.tabIcon(window.tabs.indexOf(tab)).isNull()  # the spinner is gone


def test_stop_ends_one_tab_while_the_other_goes_on(qtbot, make_window) -> None:
    window = make_window()
    long_answers(window)
    first = window.current_tab()
    type_and_send(qtbot, first, "Count to one hundred.")
    second = window.new_chat()
    type_and_send(qtbot, second, "Count to one hundred.")
    qtbot.waitUntil(lambda: len(first.streamed_text) > 10 and len(second.streamed_text) > 10, timeout=60_000)
    window.tabs.setCurrentWidget(first)
    window.activateWindow()
    with qtbot.waitSignal(window.bridge.turn_finished, timeout=30_000) as stopped:
        qtbot.keyClick(first.input, Qt.Key.Key_Escape)
    assert stopped.args[0].chat_id == first.chat_id and stopped.args[0].reason == "cancelled"
    assert not first.answering and second.answering
    assert "stopped" in first.view.cards()[-1].footer.text()
    window.tabs.setCurrentWidget(second)
    length = len(second.streamed_text)
    qtbot.waitUntil(lambda: len(second.streamed_text) > length + 20, timeout=60_000)
    assert answer_text(second).startswith(second.streamed_text[:10].strip())  # shown once its tab is visible
    second.stop()
    qtbot.waitUntil(lambda: not second.answering, timeout=30_000)


def test_closing_an_answering_tab_frees_its_slot_for_a_third(qtbot, make_window) -> None:
    window = make_window(slots=2)
    long_answers(window)
    tabs = [window.current_tab(), window.new_chat(), window.new_chat()]
    started: list[str] = []
    window.bridge.turn_started.connect(lambda event: started.append(event.chat_id))
    for tab in tabs:
        type_and_send(qtbot, tab, "Count to one hundred.")
    qtbot.waitUntil(lambda: len(tabs[0].streamed_text) > 10 and len(tabs[1].streamed_text) > 10, timeout=60_000)
    assert started == [tabs[0].chat_id, tabs[1].chat_id]  # two slots: the third tab waits
    window.tabs.setCurrentWidget(tabs[0])
    with qtbot.waitSignal(window.bridge.turn_started, timeout=30_000) as third:
        qtbot.keyClick(window.current_tab().input, Qt.Key.Key_W, Qt.KeyboardModifier.ControlModifier)
    assert third.args[0].chat_id == tabs[2].chat_id and window.tabs.count() == 2
    qtbot.waitUntil(lambda: len(tabs[2].streamed_text) > 10, timeout=60_000)
    assert tabs[1].answering  # the third was served because of the closed tab, not a finished one
    for tab in tabs[1:]:
        tab.stop()
    qtbot.waitUntil(lambda: not tabs[1].answering and not tabs[2].answering, timeout=30_000)


def test_gauge_shows_speed_device_and_model_while_streaming(qtbot, make_window) -> None:
    window = make_window()
    long_answers(window)
    gauge = window.gauge
    assert " · llama.cpp · Q4_1 · flash attention " in gauge.model_label.text()
    first = window.current_tab()
    type_and_send(qtbot, first, "Count to one hundred.")
    second = window.new_chat()
    type_and_send(qtbot, second, "Count to one hundred.")
    qtbot.waitUntil(lambda: gauge.tokens_per_second > 0 and gauge.slots_label.text() == "slots 2/4", timeout=60_000)
    assert gauge.device_label.text() == "CPU"
    assert gauge.memory_label.text().startswith("RAM ") and gauge.memory_bar.parts[0].size > 50_000_000
    assert gauge.speed_label.text().endswith(" tok/s") and float(gauge.speed_label.text().split()[0]) > 0
    assert len(gauge.sparkline.samples) >= 1
    details = gauge.details_html()
    assert "KV cache" in details and (first.title in details or second.title in details)
    assert "tok/s" in first.view.cards()[-1].footer.text() or "tok/s" in second.view.cards()[-1].footer.text()
    for tab in (first, second):
        tab.stop()
    qtbot.waitUntil(lambda: gauge.slots_label.text() == "slots 0/4", timeout=30_000)
    assert gauge.tokens_per_second == 0


def test_an_error_for_one_chat_shows_in_its_tab_only(qtbot, make_window) -> None:
    window = make_window(context_length=128)
    first, second = window.current_tab(), window.new_chat()
    first.input.setPlainText("tell me " * 200)  # far beyond 128 tokens
    first.send()
    qtbot.waitUntil(lambda: not first.answering, timeout=30_000)
    errors = [card for card in first.view.cards() if card.role == "error"]
    assert len(errors) == 1 and "context of 128 tokens" in errors[0].text()
    type_and_send(qtbot, second, "Name three colours.")
    qtbot.waitUntil(lambda: not second.answering, timeout=60_000)
    assert answer_text(second) != "" and not [c for c in second.view.cards() if c.role == "error"]
    # An error event the engine thread emits for one chat lands in that tab, not as a crash.
    sender = threading.Thread(target=window.bridge._engine_event.emit, args=(ChatError(second.chat_id, "GPU on fire"),))
    sender.start()
    sender.join()
    qtbot.waitUntil(lambda: second.view.cards()[-1].role == "error", timeout=5_000)
    assert second.view.cards()[-1].text() == "GPU on fire" and len(errors) == 1


def test_markdown_renders_and_copy_buttons_copy(qtbot, scripted_window) -> None:
    from app.bridge import ChatMessage

    window = scripted_window()  # a conversation set by hand: no model needed
    tab = window.current_tab()
    answer = "Here:\n\n```python\ndef add(a, b):\n    return a + b\n```\n\nUse **add**. <b>raw</b>"
    tab.set_conversation([ChatMessage("user", "code please"), ChatMessage("assistant", answer)])
    card = tab.view.cards()[-1]
    shown = card.browser.toPlainText()
    assert "def add(a, b):" in shown and "```" not in shown and "**" not in shown and "<b>raw</b>" in shown
    assert card.browser.code_blocks == ["def add(a, b):\n    return a + b"]
    card.copy_button.click()
    assert QGuiApplication.clipboard().text() == answer
    card.browser.code_block_widgets()[0].copy_button.click()
    assert QGuiApplication.clipboard().text() == "def add(a, b):\n    return a + b"


def test_enter_sends_and_shift_enter_adds_a_line(qtbot, scripted_window) -> None:
    window = scripted_window()
    window.activateWindow()
    tab = window.current_tab()
    qtbot.keyClicks(tab.input, "first line")
    qtbot.keyClick(tab.input, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(tab.input, "second line")
    assert tab.input.toPlainText() == "first line\nsecond line" and not tab.answering
    qtbot.keyClick(tab.input, Qt.Key.Key_Return)
    assert tab.input.toPlainText() == "" and tab.answering
    assert tab.messages[0].content == "first line\nsecond line" and window.tabs.tabText(0) == "first line"  # the first line, as the store titles it
    chat_id, messages, _ = window.bridge.submitted[-1]
    assert chat_id == tab.chat_id and messages[-1].content == "first line\nsecond line"
    window.bridge.answer(tab.chat_id, "Both lines ", "arrived.")
    assert not tab.answering and tab.messages[-1].content == "Both lines arrived."


def test_tabs_open_close_rename_and_switch_from_the_keyboard(qtbot, scripted_window) -> None:
    window = scripted_window()  # tabs and keys: no model needed
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)  # shortcuts go to the active window only
    tabs = window.tabs
    for _ in range(2):
        qtbot.keyClick(window, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier)
    assert tabs.count() == 3 and tabs.currentIndex() == 2
    qtbot.keyClick(window, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
    assert tabs.currentIndex() == 0
    qtbot.keyClick(window, Qt.Key.Key_Backtab, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert tabs.currentIndex() == 2
    bar = tabs.tabBar()
    qtbot.mouseDClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(1).center())
    editor = tabs.rename_editor
    assert editor is not None and editor.text() == "Chat 2"
    editor.selectAll()
    qtbot.keyClicks(editor, "Recipes")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    assert tabs.tabText(1) == "Recipes" and tabs.widget(1).title == "Recipes" and tabs.rename_editor is None
    qtbot.mouseDClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(1).center())
    qtbot.keyClicks(tabs.rename_editor, "Nope")
    qtbot.keyClick(tabs.rename_editor, Qt.Key.Key_Escape)  # cancels
    assert tabs.tabText(1) == "Recipes" and tabs.rename_editor is None
    assert tabs.isMovable()
    closed = tabs.widget(0).chat_id
    tabs.setCurrentIndex(0)
    qtbot.keyClick(window, Qt.Key.Key_W, Qt.KeyboardModifier.ControlModifier)
    assert tabs.count() == 2 and closed not in [tab.chat_id for tab in window.chat_tabs()]


def test_regenerate_answers_again_and_reuses_the_cache(qtbot, make_window) -> None:
    window = make_window()
    tab = window.current_tab()
    with qtbot.waitSignal(window.bridge.turn_started, timeout=30_000) as first:
        type_and_send(qtbot, tab, "Name three colours.")
    qtbot.waitUntil(lambda: not tab.answering, timeout=60_000)
    with qtbot.waitSignal(window.bridge.turn_started, timeout=30_000) as started:
        tab.regenerate_button.click()
    # The same question again, without the old answer; all but its last token come from the slot's
    # KV cache. (Not "the same text again": the last token is now computed alone, not in the prompt's
    # batch, and on another CPU that rounding may tip a near-tie between two tokens the other way.)
    assert started.args[0].prompt_tokens == first.args[0].prompt_tokens
    assert started.args[0].reused_tokens == started.args[0].prompt_tokens - 1
    qtbot.waitUntil(lambda: not tab.answering, timeout=60_000)
    assert [m.role for m in tab.messages] == ["user", "assistant"]
    assert tab.messages[-1].content.strip()
    assert len([c for c in tab.view.cards() if c.role == "assistant"]) == 1


def test_the_view_follows_new_text_unless_scrolled_up(qtbot, make_window) -> None:
    window = make_window()
    long_answers(window)
    window.resize(700, 420)
    tab = window.current_tab()
    type_and_send(qtbot, tab, "Count to one hundred.")
    bar = tab.view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=60_000)
    qtbot.waitUntil(lambda: bar.maximum() > 60, timeout=60_000)
    assert bar.value() == bar.maximum()  # pinned while text streams in
    bar.setValue(0)
    grown = bar.maximum()
    qtbot.waitUntil(lambda: bar.maximum() > grown + 20, timeout=60_000)
    assert bar.value() == 0 and not tab.view.pinned  # the reader's position is kept
    tab.stop()
    qtbot.waitUntil(lambda: not tab.answering, timeout=30_000)
