"""Settings > Draft model for a model the transformers backend loads (a folder, or a GGUF read through
transformers): the row picks a transformers folder, refuses what is not one, keeps the choice for its model, and the
ModelConfig gets it only where the backend can load it (engine/catalog/draft_kind.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.models.library import config_for_path
from app.settings.draft_model_row import DraftModelRow
from app.settings.store import Settings, model_config


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("HEARTH_CONFIG_DIR", str(tmp_path / "config"))
    return Settings.load()


def folder_with_config(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}", encoding="utf-8")  # the row looks for it; the model is read at load
    return folder


def test_a_folder_model_takes_a_folder_and_refuses_a_gguf(qtbot, tmp_path: Path, settings: Settings) -> None:
    model, draft = folder_with_config(tmp_path / "big-llama"), folder_with_config(tmp_path / "small-llama")
    empty, gguf = tmp_path / "empty", tmp_path / "small.gguf"
    empty.mkdir()
    gguf.write_bytes(b"GGUF" + bytes(60))
    row = DraftModelRow()
    qtbot.addWidget(row)
    row.load(settings)
    row.set_model(str(model))
    row.set_backend("hf")
    assert row.wants_folder and row.label.text() == "none" and row.choose_button.isEnabled()
    assert "transformers model folder" in row.choose_button.toolTip()

    with qtbot.assertNotEmitted(row.changed):
        assert not row.choose(str(gguf))
    assert row.label.text() == ("small.gguf was not used: it is not a folder (a transformers model is a folder "
                                "with config.json). Draft model: none")
    with qtbot.assertNotEmitted(row.changed):
        assert not row.choose(str(empty))
    assert row.label.text() == "empty was not used: it is not a transformers model folder (no config.json). Draft model: none"
    with qtbot.waitSignal(row.changed, timeout=1000):
        assert row.choose(str(draft))
    assert row.label.text() == "small-llama" and row.label.styleSheet() == "" and row.clear_button.isEnabled()

    row.collect(settings)
    assert settings.get("model.draft_models") == {str(model): str(draft)}
    settings.set("model.path", str(model))
    config = model_config(settings)
    assert (config.backend, config.draft_model) == ("hf", str(draft))
    assert config_for_path(config, str(model), draft_models={str(model): str(draft)}).draft_model == str(draft)
    assert config_for_path(config, str(tmp_path / "other-llama"), draft_models={str(model): str(draft)}
                           ).draft_model is None, "never another model's"


def test_a_gguf_drafts_with_what_its_backend_loads(qtbot, tmp_path: Path, settings: Settings) -> None:
    model, draft = tmp_path / "big.gguf", folder_with_config(tmp_path / "small-llama")
    model.write_bytes(b"GGUF" + bytes(60))
    row = DraftModelRow()
    qtbot.addWidget(row)
    row.load(settings)
    row.set_model(str(model))
    assert not row.wants_folder, "llama.cpp first: a GGUF"
    row.set_backend("hf")  # the GGUF read through transformers
    assert row.choose(str(draft))
    row.collect(settings)
    settings.set("model.path", str(model))
    settings.set("model.backend", "hf")
    config = model_config(settings)
    assert (config.backend, config.gguf_file, config.draft_model) == ("hf", str(model), str(draft))

    settings.set("model.backend", "llamacpp")
    assert model_config(settings).draft_model is None, "llama.cpp cannot load a transformers folder"
    assert config_for_path(config, str(model), draft_models={str(model): str(draft)}).draft_model is None
    row.set_backend("llamacpp")
    assert not row.wants_folder
    assert row.label.text() == "none: small-llama is a transformers folder, for transformers"
    assert row.clear_button.isEnabled(), "the choice can still be cleared"
    row.clear()
    assert row.label.text() == "none" and not row.clear_button.isEnabled()
