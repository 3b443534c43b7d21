"""Applying settings in the real window: a failed load keeps the old model answering."""

from __future__ import annotations

from dataclasses import replace

from tests.app.helpers import answer_text, type_and_send


def test_a_failed_load_keeps_the_old_model_and_the_dialog_says_why(qtbot, make_window, tmp_path) -> None:
    window = make_window()
    in_effect = window.model.config_in_effect
    assert in_effect is not None and in_effect.path.endswith(".gguf")
    window.open_settings()
    dialog = window._settings_dialog
    qtbot.waitUntil(dialog.isVisible)
    broken = tmp_path / "not-a-model.gguf"
    broken.write_text("plain text, not a model\n")
    with qtbot.waitSignal(window.bridge.model_load_failed, timeout=60_000) as failed:
        dialog.model_config_applied.emit(replace(in_effect, path=str(broken)))
    assert "not-a-model.gguf" in failed.args[0]
    assert "not-a-model.gguf" in dialog.error_label.text(), "the error shows in the dialog the user is looking at"
    assert window.model.config_in_effect == in_effect and window.model.model_config == in_effect
    assert window.bridge.model_info is not None and "not-a-model" not in window.model.label.text().split(":")[0]
    tab = window.current_tab()
    assert tab.input.isEnabled(), "the old model still answers"
    with qtbot.waitSignal(window.bridge.turn_finished, timeout=120_000):
        type_and_send(qtbot, tab, "Say hello.")
    assert len(answer_text(tab)) > 0
    dialog.reject()
