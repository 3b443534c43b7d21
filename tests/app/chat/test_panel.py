"""The chat panel: a tab's own system prompt and sampling reach its next Submit (and no other tab's);
Save as default and named presets are kept in the settings."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QScrollArea

from app.chat.tab import ChatTab
from app.settings.store import Settings
from tests.app.helpers import wait_restored


def _submit(window, tab: ChatTab, text: str):  # type: ignore[no-untyped-def]
    tab.input.setPlainText(text)
    tab.send()
    chat_id, messages, sampling = window.bridge.submitted[-1]
    assert chat_id == tab.chat_id
    window.bridge.answer(tab.chat_id, "Fine.")
    return messages, sampling


def _change(tab: ChatTab) -> None:
    panel = tab.panel
    panel.system_prompt.setPlainText("Answer in haiku.")
    panel.temperature.setValue(0.3)
    panel.top_p.setValue(0.5)
    panel.max_tokens.setValue(77)


def test_the_panel_changes_reach_the_next_submit_of_its_tab_only(qtbot, scripted_window) -> None:
    window = scripted_window()
    wait_restored(qtbot, window)
    tab = window.current_tab()
    window.view_commands.toggle_chat_panel()
    assert tab.panel.isVisible() and tab.panel_button.isChecked()
    assert tab.panel.temperature.value() == window.default_sampling.temperature  # shows the defaults first
    _change(tab)
    messages, sampling = _submit(window, tab, "Hello")
    assert (sampling.temperature, sampling.top_p, sampling.max_new_tokens) == (0.3, 0.5, 77)
    assert messages[0].role == "system" and messages[0].content == "Answer in haiku."
    assert sampling.top_k == window.default_sampling.top_k  # what the panel does not show follows the defaults
    other = window.new_chat()
    messages, sampling = _submit(window, other, "Hello")
    assert sampling == window.default_sampling and messages[0].content == window.system_prompt
    tab.panel.reset()
    assert _submit(window, tab, "Again")[1] == window.default_sampling


def test_save_as_default_and_presets_are_kept_in_the_settings(qtbot, scripted_window) -> None:
    window = scripted_window()
    wait_restored(qtbot, window)
    tab = window.current_tab()
    _change(tab)
    tab.panel.save_preset("Poet")
    tab.panel.reset()
    assert tab.panel.preset.findText("Poet") >= 0 and tab.panel.temperature.value() != 0.3
    tab.panel.apply_preset("Poet")
    assert _submit(window, tab, "Hi")[1].max_new_tokens == 77
    assert Settings.load().get("chat.presets")["Poet"]["system_prompt"] == "Answer in haiku."
    tab.panel.save_default_button.click()
    stored = Settings.load()
    assert (stored.get("sampling.temperature"), stored.get("sampling.max_new_tokens")) == (0.3, 77)
    assert stored.get("chat.system_prompt") == "Answer in haiku." and tab.panel.overrides == {}
    messages, sampling = _submit(window, window.new_chat(), "Hi")  # a new tab starts from the new defaults
    assert sampling.temperature == 0.3 and messages[0].content == "Answer in haiku."


def test_the_panel_leaves_room_for_the_think_control(qtbot, scripted_window) -> None:
    window = scripted_window()
    panel = window.current_tab().panel
    assert panel.think_slot.count() == 0 and panel.column.indexOf(panel.think_slot) >= 0


def test_the_open_panel_fits_a_1280x720_screen_and_scrolls_to_every_box(qtbot, scripted_window) -> None:
    window = scripted_window()
    wait_restored(qtbot, window)
    tab = window.current_tab()
    window.view_commands.toggle_chat_panel()
    assert tab.panel.isVisible()
    assert window.minimumSizeHint().height() <= 720 - 40 - 32  # a title bar and a task bar
    window.resize(1280, 720 - 40 - 32)
    qtbot.waitUntil(lambda: window.height() == 720 - 40 - 32)
    scroll = tab.panel.findChild(QScrollArea)
    for box in (tab.panel.system_prompt, tab.panel.temperature, tab.panel.seed, tab.panel.max_tokens,
                tab.panel.save_default_button):
        scroll.ensureWidgetVisible(box)
        top_left = box.mapTo(scroll.viewport(), QPoint(0, 0))
        assert scroll.viewport().rect().contains(QRect(top_left, box.size())), box.accessibleName()
