"""The per-chat Think setting in the real window (scripted engine): offered from the template's capabilities only,
its choice and budget reach the next Submit, and it is stored with the chat."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.chat.tab import ChatTab
from app.chat.think_control import template_options
from tests.app.helpers import wait_restored
from tests.app.scripted_bridge import model_info

SWITCH = model_info(capabilities=("reasoning", "thinking_switch"))
EFFORT = model_info(capabilities=("reasoning", "reasoning_effort"))


def _send(qtbot, window, text: str = "Hello") -> None:  # type: ignore[no-untyped-def]
    tab = window.current_tab()
    tab.input.setPlainText(text)
    tab.send()
    window.bridge.answer(tab.chat_id, "Hi.")


def _choices(tab: ChatTab) -> list[str]:
    box = tab.think_control.choice_box
    return [box.itemData(i) for i in range(box.count())]


def _pick(qtbot, tab: ChatTab, choice: str) -> None:  # type: ignore[no-untyped-def]
    """As a person does it: the keyboard walks the box until the choice is current."""
    box = tab.think_control.choice_box
    box.setFocus()
    for _ in range(box.count()):
        if box.currentData() == choice:
            return
        qtbot.keyClick(box, Qt.Key.Key_Down)
    assert box.currentData() == choice


def test_a_model_without_a_switch_offers_nothing_and_sends_nothing(qtbot, scripted_window) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window(model_info())
    wait_restored(qtbot, window)
    tab = window.current_tab()
    assert tab.think_control.isHidden()
    _send(qtbot, window)
    assert window.bridge.template_options[-1] == () and window.bridge.submitted[-1][2].reasoning_budget is None


def test_a_model_that_only_thinks_offers_the_budget_alone(qtbot, scripted_window) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window(model_info(capabilities=("reasoning",)))
    wait_restored(qtbot, window)
    control = window.current_tab().think_control
    assert not control.isHidden() and control.choice_box.isHidden() and not control.budget_box.isHidden()


def test_on_off_reaches_the_next_submit_and_off_hides_the_budget(qtbot, scripted_window) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window(SWITCH)
    wait_restored(qtbot, window)
    tab = window.current_tab()
    assert not tab.think_control.isHidden() and _choices(tab) == ["on", "off"]
    tab.think_control.budget_box.setValue(512)
    _send(qtbot, window)
    assert window.bridge.template_options[-1] == (("enable_thinking", "true"),)
    assert window.bridge.submitted[-1][2].reasoning_budget == 512
    _pick(qtbot, tab, "off")
    assert tab.think_control.budget_box.isHidden()
    _send(qtbot, window, "Again")
    assert window.bridge.template_options[-1] == (("enable_thinking", "false"),)
    assert window.bridge.submitted[-1][2].reasoning_budget is None  # no thinking, no budget


def test_effort_choices_reach_the_next_submit(qtbot, scripted_window) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window(EFFORT)
    wait_restored(qtbot, window)
    tab = window.current_tab()
    assert _choices(tab) == ["low", "medium", "high"] and tab.think_control.choice_box.currentData() == "medium"
    _pick(qtbot, tab, "high")
    _send(qtbot, window)
    assert window.bridge.template_options[-1] == (("reasoning_effort", '"high"'),)


def test_the_choice_is_stored_with_the_chat_and_restored(qtbot, scripted_window) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window(SWITCH)
    wait_restored(qtbot, window)
    tab = window.current_tab()
    _send(qtbot, window)  # a chat with a message is one the history reopens
    _pick(qtbot, tab, "off")
    tab.think_control.budget_box.setValue(0)
    other = window.new_chat()
    assert other.think_control.choice_box.currentData() == "on"  # the setting is each chat's own
    window.close()

    again = scripted_window(SWITCH)
    wait_restored(qtbot, again)
    restored = next(t for t in again.chat_tabs() if t.chat_id == tab.chat_id)
    assert restored.think_control.choice == "off" and restored.think_control.choice_box.currentData() == "off"
    again.tabs.setCurrentWidget(restored)
    _send(qtbot, again, "Once more")
    assert again.bridge.template_options[-1] == (("enable_thinking", "false"),)


def test_a_choice_the_model_cannot_take_falls_back_to_its_default() -> None:
    both = ("reasoning", "thinking_switch", "reasoning_effort")
    assert template_options("off", ("reasoning_effort",)) == (("reasoning_effort", '"medium"'),)
    assert template_options("low", ("thinking_switch",)) == (("enable_thinking", "true"),)
    assert template_options("low", both) == (("enable_thinking", "true"), ("reasoning_effort", '"low"'))
    assert template_options("off", both) == (("enable_thinking", "false"),)
    assert template_options("on", ("reasoning",)) == ()
