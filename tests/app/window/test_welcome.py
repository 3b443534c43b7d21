"""First run: an empty chat says which model is loaded and how to add your own."""

from __future__ import annotations

from tests.app.helpers import type_and_send


def test_an_empty_chat_welcomes_and_the_welcome_gives_way_to_the_chat(qtbot, make_window) -> None:
    window = make_window()
    tab = window.current_tab()
    assert tab.welcome.isVisible()
    text = tab.welcome.text()
    assert "SmolLM2-135M-Instruct" in text and "small and fast" in text and "on the CPU" in text
    assert "Open GGUF file" in text and "Open Hugging Face model folder" in text
    with qtbot.waitSignal(window.bridge.turn_finished, timeout=120_000):
        type_and_send(qtbot, tab, "Say hello.")
    assert not tab.welcome.isVisible()
    second = window.new_chat()
    window.tabs.setCurrentWidget(second)
    qtbot.waitUntil(second.welcome.isVisible)
    assert second.welcome.text() == text
