"""Choosing a llama.cpp model's vision projector in Settings, in the real window (llama-server's --mmproj): the
estimate counts it, Apply reloads the model seeing pictures, the choice is kept for that model only, and a file
that is not a GGUF is refused on the row."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from app.models.library import config_for_path
from app.settings.store import settings_path
from engine.randweights.mmproj import write_mmproj
from engine.images import can_see


def test_a_chosen_projector_is_counted_applied_and_kept(qtbot, make_window, tmp_path: Path, default_model: str) -> None:
    window = make_window()
    assert not can_see(window.bridge.model_info)
    window.open_settings()
    dialog = window._settings_dialog
    qtbot.waitUntil(dialog.isVisible)
    row = dialog.form.projector_row
    assert row.label.text() == "none: this model reads text only" and row.isVisibleTo(dialog)
    before = dialog.current_estimate()
    assert before is not None

    not_gguf = tmp_path / "mmproj-notes.gguf"
    not_gguf.write_text("a text file with a projector's name")
    assert not row.choose(str(not_gguf))
    assert row.label.text().startswith("mmproj-notes.gguf was not used: it is not a GGUF file.")
    assert dialog.current_estimate().weights_bytes == before.weights_bytes

    (tmp_path / "elsewhere").mkdir()
    projector = write_mmproj(tmp_path / "elsewhere" / "vision-576.gguf", 576)
    assert row.choose(str(projector)) and row.label.text() == "vision-576.gguf"
    assert dialog.current_estimate().weights_bytes - before.weights_bytes == projector.stat().st_size
    apply = dialog.buttons.button(QDialogButtonBox.StandardButton.Apply)
    with qtbot.waitSignal(window.bridge.model_loaded, timeout=60_000) as loaded:
        qtbot.mouseClick(apply, Qt.MouseButton.LeftButton)
    assert can_see(loaded.args[0]) and window.model.config_in_effect.mmproj == str(projector)
    stored = json.loads(settings_path().read_text())["settings"]
    assert stored["model.projectors"] == {default_model: str(projector)}
    # another model of the library is loaded with its own projector (none here), not this one's
    other = config_for_path(window.model.config_in_effect, str(tmp_path / "other.gguf"), stored["model.projectors"])
    assert other.mmproj is None

    row.clear()
    assert row.label.text() == "none: this model reads text only" and not row.clear_button.isEnabled()
    with qtbot.waitSignal(window.bridge.model_loaded, timeout=60_000) as loaded:
        qtbot.mouseClick(apply, Qt.MouseButton.LeftButton)
    assert not can_see(loaded.args[0])
    dialog.reject()
