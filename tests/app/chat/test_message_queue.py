"""Sending while the chat answers queues the message above the input: editable, cancellable, and sent
as the next turn when the answer ends (one per answer, oldest first)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from tests.app.helpers import type_and_send


def _user_texts(bridge, index: int) -> list[str]:  # type: ignore[no-untyped-def]
    """The user messages of the `index`th prompt the engine was sent."""
    return [message.content for message in bridge.submitted[index][1] if message.role == "user"]


def test_messages_sent_while_answering_wait_and_go_in_turn(qtbot, scripted_window) -> None:
    window = scripted_window()
    bridge, tab = window.bridge, window.current_tab()
    type_and_send(qtbot, tab, "First question")
    assert tab.answering and len(bridge.submitted) == 1  # the scripted engine holds the answer
    type_and_send(qtbot, tab, "Second question")
    type_and_send(qtbot, tab, "Third question")
    queue = tab.message_queue
    assert queue.texts() == ["Second question", "Third question"] and len(bridge.submitted) == 1
    assert queue.isVisible() and queue.title.text().startswith("Queued (2)")
    assert tab.input.toPlainText() == "" and tab.input.isEnabled()  # free for the next one
    assert [card.text() for card in tab.view.message_cards()] == ["First question", "…"]  # not in the transcript yet
    bridge.answer(tab.chat_id, "First answer.")
    qtbot.waitUntil(lambda: len(bridge.submitted) == 2)
    assert _user_texts(bridge, 1) == ["First question", "Second question"]
    assert [m.content for m in tab.messages] == ["First question", "First answer.", "Second question"]
    assert queue.texts() == ["Third question"] and tab.answering
    bridge.answer(tab.chat_id, "Second answer.")
    qtbot.waitUntil(lambda: len(bridge.submitted) == 3)
    assert _user_texts(bridge, 2)[-1] == "Third question"
    assert queue.texts() == [] and not queue.isVisible()
    bridge.answer(tab.chat_id, "Third answer.")
    assert not tab.answering and len(bridge.submitted) == 3  # nothing left to send


def test_a_queued_message_can_be_edited_or_cancelled(qtbot, scripted_window) -> None:
    window = scripted_window()
    bridge, tab = window.bridge, window.current_tab()
    type_and_send(qtbot, tab, "Question")
    type_and_send(qtbot, tab, "Draft one")
    type_and_send(qtbot, tab, "Draft two")
    first, second = tab.message_queue.items()
    qtbot.mouseClick(first.cancel_button, Qt.MouseButton.LeftButton)
    assert tab.message_queue.texts() == ["Draft two"]
    second.editor.selectAll()
    qtbot.keyClicks(second.editor, "Edited follow-up")
    bridge.answer(tab.chat_id, "Answer.")
    qtbot.waitUntil(lambda: len(bridge.submitted) == 2)
    assert _user_texts(bridge, 1) == ["Question", "Edited follow-up"]
    assert "Draft one" not in [m.content for m in tab.messages]


def test_a_stopped_answer_sends_the_queue_and_an_emptied_message_is_dropped(qtbot, scripted_window) -> None:
    window = scripted_window()
    bridge, tab = window.bridge, window.current_tab()
    type_and_send(qtbot, tab, "Question")
    type_and_send(qtbot, tab, "Never mind")
    type_and_send(qtbot, tab, "Ask this instead")
    tab.message_queue.items()[0].editor.clear()
    tab.stop()
    assert bridge.cancelled == [tab.chat_id]
    bridge.finish(tab.chat_id, "Partial", reason="cancelled")
    qtbot.waitUntil(lambda: len(bridge.submitted) == 2)
    assert _user_texts(bridge, 1)[-1] == "Ask this instead" and tab.message_queue.texts() == []


def test_a_message_typed_while_the_model_loads_is_queued_and_sent_once_it_has_loaded(qtbot, scripted_window) -> None:
    from tests.app.scripted_bridge import model_info

    window = scripted_window(info=None)  # the window is up, its model still loading
    bridge, tab = window.bridge, window.current_tab()
    bridge.progress(bridge.model_config.path, 0.3)
    assert tab.input.isEnabled() and tab.send_button.isEnabled() and tab.reason.text().startswith("Loading test.gguf… 30%")
    type_and_send(qtbot, tab, "Hello before the model")
    queue = tab.message_queue
    assert queue.texts() == ["Hello before the model"] and queue.title.text() == "Queued — sent when the model has loaded"
    assert bridge.submitted == [] and tab.messages == [] and not tab.regenerate_button.isEnabled()
    bridge.finish_loading(model_info())
    qtbot.waitUntil(lambda: len(bridge.submitted) == 1)
    assert _user_texts(bridge, 0) == ["Hello before the model"] and queue.texts() == [] and tab.answering
    assert queue.note == "sent when the answer ends"


def test_a_model_that_fails_to_load_closes_the_input_and_keeps_what_was_queued(qtbot, scripted_window) -> None:
    window = scripted_window(info=None)
    bridge, tab = window.bridge, window.current_tab()
    type_and_send(qtbot, tab, "Will it load?")
    bridge.fail_loading(bridge.model_config.path, "not a GGUF file.")
    assert not tab.input.isEnabled() and not tab.send_button.isEnabled() and "not a GGUF file." in tab.reason.text()
    assert tab.message_queue.texts() == ["Will it load?"] and bridge.submitted == []
