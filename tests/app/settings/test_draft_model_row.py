"""Settings > Sampling > Draft model (under Speculative decoding): the choice is kept for one model, reaches
its ModelConfig, is never carried to another model, and a file that is not a GGUF is refused on the row."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.models.library import config_for_path
from app.settings.draft_model_row import DraftModelRow
from app.settings.store import Settings, model_config


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEARTH_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "config"


def test_a_chosen_draft_model_belongs_to_its_model(qtbot, tmp_path: Path, config_dir: Path) -> None:
    model, draft, notes = tmp_path / "big.gguf", tmp_path / "small.gguf", tmp_path / "notes.gguf"
    model.write_bytes(b"GGUF" + bytes(60))
    draft.write_bytes(b"GGUF" + bytes(60))
    notes.write_text("not a model")
    settings = Settings(config_dir / "settings.json")
    row = DraftModelRow()
    qtbot.addWidget(row)
    row.load(settings)
    row.set_model(str(model))
    assert row.label.text() == "none" and not row.clear_button.isEnabled()

    with qtbot.assertNotEmitted(row.changed):
        assert not row.choose(str(notes))
    assert row.label.text() == "notes.gguf was not used: it is not a GGUF file. Draft model: none"
    with qtbot.waitSignal(row.changed, timeout=1000):
        assert row.choose(str(draft))
    assert row.label.text() == "small.gguf" and row.clear_button.isEnabled()

    row.collect(settings)
    settings.set("model.path", str(model))
    config = model_config(settings)
    assert (config.backend, config.draft_model) == ("llamacpp", str(draft))
    assert config_for_path(config, str(tmp_path / "other.gguf")).draft_model is None, "never another model's"
    settings.set("model.path", str(tmp_path / "other.gguf"))
    assert model_config(settings).draft_model is None

    row.clear()
    row.collect(settings)
    assert settings.get("model.draft_models") == {}


def test_a_draft_model_chosen_in_settings_is_counted_and_loaded_beside_the_model(
        qtbot, make_window, requantized_model: str) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDialogButtonBox

    window = make_window()
    window.open_settings()
    dialog = window._settings_dialog
    qtbot.waitUntil(dialog.isVisible)
    row = dialog.form.draft_model_row
    assert dialog.form.sampling_form.isRowVisible(row) and row.label.text() == "none"
    before = dialog.current_estimate()
    assert before is not None and before.draft_model_bytes == 0
    assert row.choose(requantized_model)
    counted = dialog.current_estimate()
    assert counted.draft_model_bytes > Path(requantized_model).stat().st_size // 2
    assert counted.total_bytes == before.total_bytes + counted.draft_model_bytes
    apply = dialog.buttons.button(QDialogButtonBox.StandardButton.Apply)
    with qtbot.waitSignal(window.bridge.model_loaded, timeout=60_000) as loaded:
        qtbot.mouseClick(apply, Qt.MouseButton.LeftButton)
    assert loaded.args[0].draft_model == Path(requantized_model).name
    assert window.model.config_in_effect.draft_model == requantized_model
    dialog.reject()
