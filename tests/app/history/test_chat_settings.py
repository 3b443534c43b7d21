"""A chat keeps its own settings: the panel's system prompt and sampling are stored with the chat, come back
when it is reopened from the sidebar and after a restart (and are what the engine is sent), and travel in the
JSON export (a "system" message, OpenAI-style "settings") and back in through import. Real window, history
and sidebar; the scripted engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt

from app.chat.tab import ChatTab
from app.history.chat_settings import imported_settings
from app.history.records import HistoryImportError
from app.window.mainwindow import MainWindow
from engine.protocol import SamplingParams
from tests.app.helpers import LONG, wait_restored

PROMPT = "Answer like a ship's log."
CHOSEN = {"temperature": 0.35, "top_k": 12, "top_p": 0.8, "min_p": 0.1, "repeat_penalty": 1.25, "seed": 4242,
          "max_new_tokens": 99}
EXPORTED = {**{key: value for key, value in CHOSEN.items() if key != "max_new_tokens"}, "max_tokens": 99}


def _set_panel(tab: ChatTab) -> None:
    """As a user would: each box typed into and committed."""
    panel = tab.panel
    panel.system_prompt.setPlainText(PROMPT)
    boxes = {"temperature": panel.temperature, "top_k": panel.top_k, "top_p": panel.top_p, "min_p": panel.min_p,
             "repeat_penalty": panel.repeat_penalty, "seed": panel.seed, "max_new_tokens": panel.max_tokens}
    for key, box in boxes.items():
        box.setValue(CHOSEN[key])


def _sent(window: MainWindow, tab: ChatTab, text: str) -> tuple[str, SamplingParams]:
    """Send `text`, answer it; the system message and sampling the engine was given."""
    tab.input.setPlainText(text)
    tab.send()
    chat_id, messages, sampling = window.bridge.submitted[-1]  # type: ignore[attr-defined]
    assert chat_id == tab.chat_id
    window.bridge.answer(tab.chat_id, "Logged.")  # type: ignore[attr-defined]
    system = messages[0].content if messages and messages[0].role == "system" else ""
    return system, sampling


def _assert_chosen(window: MainWindow, tab: ChatTab) -> None:
    shown = tab.panel
    assert shown.system_prompt.toPlainText() == PROMPT
    assert (shown.temperature.value(), shown.top_k.value(), shown.top_p.value(), shown.min_p.value(),
            shown.repeat_penalty.value(), shown.seed.value(), shown.max_tokens.value()) == tuple(CHOSEN.values())
    system, sampling = _sent(window, tab, "And now?")
    assert system == PROMPT
    assert {key: getattr(sampling, key) for key in CHOSEN} == CHOSEN


def _click_in_sidebar(qtbot, window: MainWindow, chat_id: str) -> None:  # type: ignore[no-untyped-def]
    sidebar = window.sidebar.sidebar
    qtbot.waitUntil(lambda: sidebar.item(chat_id) is not None, timeout=LONG)
    rect = sidebar.list.visualItemRect(sidebar.item(chat_id))
    qtbot.mouseClick(sidebar.list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: window.current_tab() is not None and window.current_tab().chat_id == chat_id, timeout=LONG)


def test_the_panel_is_kept_with_the_chat_reopened_and_restarted(qtbot, scripted_window) -> None:
    window = scripted_window()
    wait_restored(qtbot, window)
    tab = window.current_tab()
    _set_panel(tab)
    system, sampling = _sent(window, tab, "Where are we?")
    assert system == PROMPT and sampling.seed == 4242 and sampling.top_k == 12
    chat_id = tab.chat_id
    other = window.new_chat()
    assert other.panel.values() == other.panel.values_of_defaults()  # another chat has its own: the defaults
    window.close_tab(tab)
    _click_in_sidebar(qtbot, window, chat_id)
    _assert_chosen(window, window.current_tab())
    random_seed = window.current_tab()
    random_seed.panel.seed.setValue(-1)  # back to "random" in this chat: stored as such
    assert _sent(window, random_seed, "Any seed")[1].seed is None
    random_seed.panel.seed.setValue(4242)
    window.close()

    again = scripted_window()
    wait_restored(qtbot, again)
    restored = next(t for t in again.chat_tabs() if t.chat_id == chat_id)
    again.tabs.setCurrentWidget(restored)
    _assert_chosen(again, restored)
    restored.panel.reset()  # back to the defaults, kept so too
    assert _sent(again, restored, "Defaults")[1] == again.default_sampling


def _export(qtbot, window: MainWindow, path: Path) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    window.history_ui.export_current("json", path)
    qtbot.waitUntil(path.exists, timeout=LONG)
    return json.loads(path.read_text(encoding="utf-8"))


def test_export_carries_the_system_message_and_settings_and_import_reads_them(qtbot, scripted_window,
                                                                            tmp_path: Path) -> None:
    window = scripted_window()
    wait_restored(qtbot, window)
    tab = window.current_tab()
    _set_panel(tab)
    _sent(window, tab, "Where are we?")
    document = _export(qtbot, window, tmp_path / "chat.json")
    assert document["messages"] == [{"role": "system", "content": PROMPT}, {"role": "user", "content": "Where are we?"},
                                     {"role": "assistant", "content": "Logged."}]
    assert document["settings"] == EXPORTED

    window.history_ui.import_path(tmp_path / "chat.json")  # our own export: everything as it was
    qtbot.waitUntil(lambda: window.tabs.count() == 2, timeout=LONG)
    imported = window.current_tab()
    assert imported.chat_id != tab.chat_id and [m.role for m in imported.messages] == ["user", "assistant"]
    _assert_chosen(window, imported)

    document["messages"][0]["content"] = "Be terse."  # edited by hand, or another program's file
    document["settings"] = {"temperature": 1.1, "max_tokens": 64, "seed": None}
    del document["hearth"]
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document), encoding="utf-8")
    window.history_ui.import_path(edited)
    qtbot.waitUntil(lambda: window.tabs.count() == 3, timeout=LONG)
    foreign = window.current_tab()
    assert foreign.panel.system_prompt.toPlainText() == "Be terse." and foreign.panel.temperature.value() == 1.1
    system, sampling = _sent(window, foreign, "Go on")
    assert system == "Be terse." and (sampling.temperature, sampling.max_new_tokens, sampling.seed) == (1.1, 64, None)
    assert sampling.top_k == window.default_sampling.top_k  # what the file does not set follows the defaults
    again = _export(qtbot, window, tmp_path / "again.json")
    assert again["messages"][0] == {"role": "system", "content": "Be terse."}
    assert again["settings"]["temperature"] == 1.1 and again["settings"]["max_tokens"] == 64


def test_a_setting_of_the_wrong_kind_is_refused_with_its_name() -> None:
    try:
        imported_settings({"top_k": 2.5}, None, "chat.json")
    except HistoryImportError as error:
        assert str(error) == 'chat.json: "settings.top_k" should be a whole number, not 2.5.'
    else:
        raise AssertionError("a fractional top_k was accepted")
    assert imported_settings({"temperature": 0, "seed": None}, "Hi", "f") == {
        "temperature": 0.0, "seed": None, "system_prompt": "Hi", "panel": {"temperature": 0.0, "seed": None,
                                                                           "system_prompt": "Hi"}}
