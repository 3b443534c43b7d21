"""Applying settings in the real window: a failed load keeps the old model answering."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from tests.app.helpers import answer_text, type_and_send


def test_a_failed_load_keeps_the_old_model_and_the_dialog_says_why(qtbot, make_window, tmp_path, default_model) -> None:
    window = make_window()
    in_effect = window.model.config_in_effect
    assert in_effect is not None and in_effect.path == default_model
    window.open_settings()
    dialog = window._settings_dialog
    qtbot.waitUntil(dialog.isVisible)
    # A download cut short: its header reads fine, so the dialog offers it; the weights are not all there.
    cut = tmp_path / "half-downloaded.gguf"
    data = Path(default_model).read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    assert dialog.open_model(str(cut)) and dialog.description.path == str(cut)
    apply = dialog.buttons.button(QDialogButtonBox.StandardButton.Apply)
    with qtbot.waitSignal(window.bridge.model_load_failed, timeout=60_000) as failed:
        qtbot.mouseClick(apply, Qt.MouseButton.LeftButton)
    assert "half-downloaded.gguf" in failed.args[0]
    assert "half-downloaded.gguf" in dialog.models.error_label.text(), "the error shows in the dialog the user is looking at"
    assert window.model.config_in_effect == in_effect and window.model.model_config == in_effect
    assert window.bridge.model_info is not None and window.model.label.text().startswith("Kept ")
    tab = window.current_tab()
    assert tab.input.isEnabled(), "the old model still answers"
    with qtbot.waitSignal(window.bridge.turn_finished, timeout=120_000):
        type_and_send(qtbot, tab, "Say hello.")
    assert len(answer_text(tab)) > 0
    dialog.reject()
