"""Model > Check quantization… in the real window: the menu opens the dialog on the window's models, and
when memory is short the chats' model makes room for the check and comes back after it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from app.quantcheck import dialog as dialog_module
from tests.engine.quantcheck.gguf_copies import requantize

pytestmark = pytest.mark.slow
PAUSED = "Paused while a quantization check runs (Model > Check quantization…)."


@pytest.fixture(scope="module")
def q8(tmp_path_factory: pytest.TempPathFactory, default_model: str) -> str:
    return requantize(default_model, tmp_path_factory.mktemp("q8"), ("Q8_0",))[0]["Q8_0"]


def _menu_action(window, menu_title: str, text: str):  # type: ignore[no-untyped-def]
    menu = next(a.menu() for a in window.menuBar().actions() if a.text() == menu_title)
    return next(action for action in menu.actions() if action.text() == text)


def test_the_menu_opens_one_dialog_on_the_windows_models(qtbot, make_window, default_model: str) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    _menu_action(window, "&Model", "Check &quantization…").trigger()
    dialog = window._quantcheck_dialog
    assert dialog is not None and dialog.isVisible() and dialog.parent() is window
    qtbot.waitUntil(lambda: dialog.picker.reference.count() > 0, timeout=30_000)  # the scan ran off the GUI thread
    assert dialog.picker.reference_path() == default_model and "(Bundled default)" in dialog.picker.reference.currentText()
    dialog.close()
    window.check_quantization()
    assert window._quantcheck_dialog is dialog and dialog.isVisible(), "the same dialog, results and all"
    dialog.close()


def test_short_memory_pauses_the_chats_model_for_the_check_and_loads_it_again(  # type: ignore[no-untyped-def]
    qtbot, make_window, default_model: str, q8: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dialog_module, "free_memory", lambda: 200 * 1024**2)
    window = make_window()
    tab = window.current_tab()
    window.check_quantization()
    dialog = window._quantcheck_dialog
    qtbot.waitUntil(lambda: dialog.picker.reference.count() > 0, timeout=30_000)
    dialog.picker.add_candidate(q8)
    dialog.inputs.chunks.setValue(1)
    dialog.inputs.question_limit.setValue(1)
    assert "so the chats' model is unloaded while the check runs" in dialog.memory_note.text()
    states: list[tuple[bool, str, bool]] = []
    dialog.worker.progressed.connect(
        lambda *_: states.append((tab.input.isEnabled(), tab.reason.text(), window.bridge.running)) if not states else None
    )
    with qtbot.waitSignal(dialog.check_finished, timeout=240_000):
        qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
        opened_meanwhile = window.new_chat()
        assert not opened_meanwhile.input.isEnabled() and opened_meanwhile.reason.text() == PAUSED
    assert states[0] == (False, PAUSED, False), "the tabs said why, and the engine thread had let its model go"
    qtbot.waitUntil(lambda: tab.model_ready, timeout=60_000)  # the chats' model comes back by itself after the check
    assert opened_meanwhile.model_ready and opened_meanwhile.input.isEnabled()
    assert window.bridge.running and window.bridge.model_info is not None
    dialog.close()
