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
    assert "Model > Get models… (Ctrl+Shift+G)" in text
    with qtbot.waitSignal(window.bridge.turn_finished, timeout=120_000):
        type_and_send(qtbot, tab, "Say hello.")
    assert not tab.welcome.isVisible()
    second = window.new_chat()
    window.tabs.setCurrentWidget(second)
    qtbot.waitUntil(second.welcome.isVisible)
    assert second.welcome.text() == text


def test_a_model_without_a_chat_template_is_named_as_such_in_every_empty_chat(qtbot, scripted_window) -> None:
    from tests.app.scripted_bridge import model_info

    window = scripted_window(info=model_info(path="/models/base-model.gguf", has_chat_template=False))
    first = window.current_tab()
    text = first.welcome.text()
    assert "base-model.gguf is loaded (llamacpp, Q4_1, on the CPU)." in text
    assert "This model has no chat template" in text and "continues text rather than answering" in text
    second = window.new_chat()
    window.tabs.setCurrentWidget(second)
    qtbot.waitUntil(second.welcome.isVisible)
    assert second.welcome.text() == text
    assert "This model has no chat template" in window.gauge.details_html()


def test_a_chat_model_gets_no_such_note(qtbot, scripted_window) -> None:
    from tests.app.scripted_bridge import model_info

    window = scripted_window(info=model_info(path="/models/chat-model.gguf"))
    assert "chat-model.gguf is loaded" in window.current_tab().welcome.text()
    assert "chat template" not in window.current_tab().welcome.text()
    assert "chat template" not in window.gauge.details_html().lower()
