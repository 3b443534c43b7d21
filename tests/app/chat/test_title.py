"""One title rule: the tab is named by its first question exactly as the stored chat is, so a restart keeps it."""

from __future__ import annotations

from app.chat.title import title_from_text, title_from_user
from tests.app.helpers import wait_restored

QUESTION = "Could you explain, in plain words, how a transformer model attends to earlier tokens?"


def test_the_rule_keeps_the_first_line_cut_at_a_word() -> None:
    assert title_from_text(QUESTION) == "Could you explain, in plain words, how a…"
    assert title_from_text("## Plan\n\nthe rest") == "Plan"
    assert title_from_text("word " * 30) == "word word word word word word word word word…"
    assert title_from_text("   \n\t") == "New chat"
    assert title_from_user("  My   notes ") == "My notes"


def test_a_tab_is_named_like_its_stored_chat_and_keeps_the_name_after_a_restart(qtbot, scripted_window) -> None:
    window = scripted_window()
    wait_restored(qtbot, window)
    tab = window.current_tab()
    tab.input.setPlainText(QUESTION)
    tab.send()
    window.bridge.answer(tab.chat_id, "It looks ", "back.")
    assert window.tabs.tabText(0) == tab.title == "Could you explain, in plain words, how a…"
    window.close()
    again = scripted_window(info=None)
    wait_restored(qtbot, again)
    assert [again.tabs.tabText(i) for i in range(again.tabs.count())] == ["Could you explain, in plain words, how a…"]


def test_a_name_the_user_types_is_kept_whole(qtbot, scripted_window) -> None:
    window = scripted_window()
    wait_restored(qtbot, window)
    long_name = "A name much longer than any title the first question would give a chat"
    window.current_tab().rename("  " + long_name + " ")
    assert window.tabs.tabText(0) == long_name
    window.close()
    again = scripted_window(info=None)
    wait_restored(qtbot, again)
    assert again.tabs.tabText(0) == long_name
