"""Branches in the window: regenerate and edit make alternatives, "< 1/2 >" switches, delete, scroll kept."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.bridge import SamplingParams
from app.history.store import HistoryStore
from app.history.database import default_database_path
from tests.app.helpers import LONG, conversation, send_and_wait, wait_restored


def click(qtbot, button) -> None:  # type: ignore[no-untyped-def]
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def bars(tab) -> list[str]:  # type: ignore[no-untyped-def]
    return [card.branch_bar.text() for card in tab.view.message_cards()]


def set_answer_length(window, tokens: int) -> None:  # type: ignore[no-untyped-def]
    # Greedy decoding gives the same answer twice; a shorter limit makes the alternative differ.
    window.default_sampling = SamplingParams(temperature=0.0, max_new_tokens=tokens, seed=0)


def test_regenerate_makes_an_alternative_that_switches_and_survives_a_restart(qtbot, make_window) -> None:
    window = make_window(max_new_tokens=12)
    wait_restored(qtbot, window)
    tab = window.current_tab()
    first = send_and_wait(qtbot, tab, "Name a fruit.")
    set_answer_length(window, 3)
    tab.regenerate()
    qtbot.waitUntil(lambda: not tab.answering and bars(tab) == ["", "< 2/2 >"], timeout=LONG)
    second = tab.messages[-1].content
    assert second != first and second.strip()
    click(qtbot, tab.view.message_cards()[-1].branch_bar.previous_button)
    qtbot.waitUntil(lambda: bars(tab) == ["", "< 1/2 >"], timeout=LONG)
    assert conversation(tab) == [("user", "Name a fruit."), ("assistant", first)]
    assert tab.view.message_cards()[-1].text() == first
    chat_id = tab.chat_id
    window.close()
    again = make_window(max_new_tokens=12)
    wait_restored(qtbot, again)
    tab = again.current_tab()
    assert tab.chat_id == chat_id and conversation(tab) == [("user", "Name a fruit."), ("assistant", first)]
    assert bars(tab) == ["", "< 1/2 >"]  # the chosen alternative was restored
    click(qtbot, tab.view.message_cards()[-1].branch_bar.next_button)
    qtbot.waitUntil(lambda: bars(tab) == ["", "< 2/2 >"], timeout=LONG)
    assert conversation(tab) == [("user", "Name a fruit."), ("assistant", second)]


def test_edit_a_question_sends_a_new_branch_and_the_old_one_stays_reachable(qtbot, make_window) -> None:
    window = make_window(max_new_tokens=8)
    wait_restored(qtbot, window)
    tab = window.current_tab()
    old_answer = send_and_wait(qtbot, tab, "Name a fruit.")
    click(qtbot, tab.view.message_cards()[0].edit_button)
    assert tab.input.toPlainText() == "Name a fruit." and tab.message_actions.editing_index == 0
    assert tab.send_button.text() == "Send edit" and tab.cancel_edit_button.isVisible()
    new_answer = send_and_wait(qtbot, tab, "Name a colour.")
    qtbot.waitUntil(lambda: bars(tab) == ["< 2/2 >", ""], timeout=LONG)
    assert conversation(tab) == [("user", "Name a colour."), ("assistant", new_answer)]
    assert tab.message_actions.editing_index is None and tab.send_button.text() == "Send"
    click(qtbot, tab.view.message_cards()[0].branch_bar.previous_button)
    qtbot.waitUntil(lambda: bars(tab) == ["< 1/2 >", ""], timeout=LONG)
    assert conversation(tab) == [("user", "Name a fruit."), ("assistant", old_answer)]
    chat_id = tab.chat_id
    window.close()
    store = HistoryStore.open(default_database_path())
    snapshot = store.load_chat(chat_id)
    store.close()
    roots = [m for m in snapshot.messages if m.parent_id is None]
    assert [m.text for m in roots] == ["Name a fruit.", "Name a colour."]
    assert [m.text for m in snapshot.path()] == ["Name a fruit.", old_answer]
    again = make_window(wait_for_model=False)
    wait_restored(qtbot, again)
    assert conversation(again.current_tab()) == [("user", "Name a fruit."), ("assistant", old_answer)]
    assert bars(again.current_tab()) == ["< 1/2 >", ""]


def test_delete_removes_the_message_and_its_answers_and_stays_deleted(qtbot, make_window) -> None:
    window = make_window(max_new_tokens=6)
    wait_restored(qtbot, window)
    tab = window.current_tab()
    first = send_and_wait(qtbot, tab, "Name a fruit.")
    send_and_wait(qtbot, tab, "Name another one.")
    assert len(tab.messages) == 4
    click(qtbot, tab.view.message_cards()[2].delete_button)
    assert conversation(tab) == [("user", "Name a fruit."), ("assistant", first)]
    qtbot.waitUntil(lambda: window.history_ui.branches.switches >= 1, timeout=LONG)  # the store's view came back
    assert conversation(tab) == [("user", "Name a fruit."), ("assistant", first)]
    assert len(tab.view.message_cards()) == 2 and tab.regenerate_button.isEnabled()
    chat_id = tab.chat_id
    window.close()
    store = HistoryStore.open(default_database_path())
    texts = sorted(m.text for m in store.load_chat(chat_id).messages)
    store.close()
    assert texts == sorted(["Name a fruit.", first])
    again = make_window(wait_for_model=False)
    wait_restored(qtbot, again)
    assert conversation(again.current_tab()) == [("user", "Name a fruit."), ("assistant", first)]


def _long_chat() -> str:
    store = HistoryStore.open(default_database_path())
    chat = store.create_chat("Long", "", None)
    parent = None
    for turn in range(12):
        question = store.add_message(chat.id, "user", f"Question {turn}?", parent)
        parent = store.add_message(chat.id, "assistant", "\n\n".join([f"Answer {turn} line."] * 8), question.id).id
    store.set_open_tabs([chat.id], chat.id)
    store.close()
    return chat.id


def _from_bottom(tab) -> float:  # type: ignore[no-untyped-def]
    bar = tab.view.verticalScrollBar()
    return (bar.maximum() - bar.value()) / bar.maximum() if bar.maximum() > 0 else 0.0


def _stored_scroll(chat_id: str) -> float:
    store = HistoryStore.open(default_database_path())
    position = store.chat(chat_id).scroll_position
    store.close()
    return position


def test_scroll_position_is_stored_on_close_and_restored(qtbot, make_window) -> None:
    chat_id = _long_chat()
    window = make_window()
    wait_restored(qtbot, window)
    tab = window.current_tab()
    assert tab.chat_id == chat_id
    bar = tab.view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 1000 and bar.value() == bar.maximum(), timeout=LONG)  # a new read starts at the bottom
    bar.setValue(bar.maximum() // 3)
    saved = tab.view.scroll_from_bottom()
    assert 0.5 < saved < 0.8
    window.close()
    assert abs(_stored_scroll(chat_id) - saved) < 1e-9
    again = make_window()
    wait_restored(qtbot, again)
    tab = again.current_tab()
    qtbot.waitUntil(lambda: tab.view.verticalScrollBar().maximum() > 1000, timeout=LONG)
    qtbot.waitUntil(lambda: abs(_from_bottom(tab) - saved) < 0.02, timeout=LONG)
    tab.view.verticalScrollBar().setValue(0)  # to the top, then close the tab itself
    again.close_chat(again.tabs.indexOf(tab))
    again.close()
    assert _stored_scroll(chat_id) == 1.0
