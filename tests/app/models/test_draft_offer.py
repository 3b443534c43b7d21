"""Get models offers a draft model with a GGUF model (app/models/draft_offer.py), against the stand-in Hub: the
suggestion and the chosen file's fit with it are shown, a ticked box downloads it after the model, and "Use
this model" makes it that model's draft model in the settings, so the model loads with it."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from app.models.files_table import needs_text
from app.models.launcher import GetModels
from app.settings.store import Settings
from engine.protocol import ModelConfig
from tests.engine.hub.fixtures import GGUF_REPO, Q8_0_PARTS
from tests.engine.hub.stand_in_hub import StandInHub

CONFIG = ModelConfig(path="", context_length=2048, slots=2, device="cpu")
TARGET = "hearth-test/SmolLM2-1.7B-Instruct-GGUF"
TARGET_FILE = "SmolLM2-1.7B-Instruct.Q4_1.gguf"


@pytest.fixture
def get_models(qtbot, hub: StandInHub, default_model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HEARTH_CONFIG_DIR", str(tmp_path / "config"))
    hub.add_repo(TARGET, {TARGET_FILE: Path(default_model), "README.md": b"# a stand-in\n"},
                 ["gguf", "llama", "text-generation"])
    window = QWidget()
    qtbot.addWidget(window)
    launcher = GetModels(window, Settings(tmp_path / "config" / "settings.json"))
    yield launcher
    launcher.shutdown()


def test_the_draft_model_is_offered_downloaded_after_the_model_and_used_with_it(qtbot, get_models: GetModels,
                                                                              hub: StandInHub) -> None:
    dialog = get_models.open(CONFIG)
    offer = dialog.draft_offer
    with qtbot.waitSignal(offer.answered, timeout=30_000):
        dialog.query.setText(TARGET)
        qtbot.keyClick(dialog.query, Qt.Key.Key_Return)
    assert offer.label.text().startswith(f"Draft model (speculative decoding): {GGUF_REPO} · {Path(Q8_0_PARTS[0]).name}")
    assert "the same vocabulary (49,152 tokens), 135M parameters against 1.7B." in offer.label.text()
    assert offer.isVisible() and offer.take.isVisible() and not offer.take.isChecked()
    chosen_file = dialog.files.selected_choice()
    assert chosen_file is not None and chosen_file.key == TARGET_FILE
    fit = offer.suggestion.fits[TARGET_FILE] if offer.suggestion else None
    assert fit is not None and offer.fit_label.text() == f"With it, {TARGET_FILE} needs {needs_text(fit)}: fits."
    alone = dialog.answer.report.fit(TARGET_FILE) if dialog.answer and dialog.answer.report else None
    assert alone is not None and fit.need_bytes > alone.need_bytes and fit.message in offer.fit_label.toolTip()
    offer.take.setChecked(True)
    with qtbot.waitSignal(dialog.downloads.finished, timeout=60_000) as model:
        qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)
    assert model.args[0].repo_id == TARGET
    assert not dialog.use_button.isVisible(), "the draft model downloads next"
    with qtbot.waitSignal(dialog.downloads.finished, timeout=60_000) as draft:
        pass
    assert (draft.args[0].repo_id, draft.args[0].choice.key) == (GGUF_REPO, Q8_0_PARTS[0])
    assert dialog.use_button.isVisible() and "draft model" in dialog.progress_label.text()
    assert hub.bytes_served(GGUF_REPO) >= sum(hub.repos[GGUF_REPO].files[part].size for part in Q8_0_PARTS)
    with qtbot.waitSignal(get_models.model_config_chosen) as chosen:
        qtbot.mouseClick(dialog.use_button, Qt.MouseButton.LeftButton)
    config: ModelConfig = chosen.args[0]
    assert config.path == model.args[0].path and config.draft_model == draft.args[0].path
    assert get_models.settings.get("model.draft_models") == {config.path: config.draft_model}


def test_without_the_box_ticked_only_the_model_is_downloaded(qtbot, get_models: GetModels, hub_env: Path) -> None:
    dialog = get_models.open(CONFIG)
    with qtbot.waitSignal(dialog.draft_offer.answered, timeout=30_000):
        dialog.query.setText(TARGET)
        qtbot.keyClick(dialog.query, Qt.Key.Key_Return)
    with qtbot.waitSignal(dialog.downloads.finished, timeout=60_000):
        dialog.download()
    assert dialog.use_button.isVisible() and not dialog.downloads.active
    assert not list(hub_env.glob(f"hub/models--{GGUF_REPO.replace('/', '--')}/blobs/*")), "no draft model fetched"
    with qtbot.waitSignal(get_models.model_config_chosen) as chosen:
        dialog.use()
    assert chosen.args[0].draft_model is None and get_models.settings.get("model.draft_models") == {}


def test_a_transformers_folder_is_offered_a_smaller_folder_and_uses_it_after_both_download(
        qtbot, get_models: GetModels, hub: StandInHub, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The same for a transformers repo: its family's folders are compared by tokenizer.json, and the folder that
    downloads after the model becomes its draft model (the transformers runner takes a folder)."""
    pytest.importorskip("transformers")
    from tests.engine.runners.hf.tiny_hf import build_tiny_llama

    folders = tmp_path_factory.mktemp("folders")
    for repo_id, seed in (("hearth-test/TinyChat-1.1B", 0), ("hearth-test/TinyChat-110M", 1)):
        folder = build_tiny_llama(folders / repo_id.split("/")[1], seed=seed)
        hub.add_repo(repo_id, {p.name: p for p in sorted(Path(folder).iterdir()) if p.is_file()},
                     ["safetensors", "transformers", "llama", "text-generation"], library_name="transformers")
    dialog = get_models.open(CONFIG)
    offer = dialog.draft_offer
    with qtbot.waitSignal(offer.answered, timeout=30_000):
        dialog.query.setText("hearth-test/TinyChat-1.1B")
        qtbot.keyClick(dialog.query, Qt.Key.Key_Return)
    assert offer.label.text().startswith("Draft model (speculative decoding): hearth-test/TinyChat-110M · ")
    assert "110M parameters against 1.1B." in offer.label.text() and offer.take.isVisible()
    chosen_file = dialog.files.selected_choice()
    assert chosen_file is not None and chosen_file.kind == "hf" and offer.fit_label.text().startswith("With it, ")
    offer.take.setChecked(True)
    with qtbot.waitSignal(dialog.downloads.finished, timeout=60_000) as model:
        dialog.download()
    with qtbot.waitSignal(dialog.downloads.finished, timeout=60_000) as draft:
        pass
    assert draft.args[0].repo_id == "hearth-test/TinyChat-110M" and Path(draft.args[0].path, "tokenizer.json").is_file()
    with qtbot.waitSignal(get_models.model_config_chosen) as chosen:
        qtbot.mouseClick(dialog.use_button, Qt.MouseButton.LeftButton)
    config: ModelConfig = chosen.args[0]
    assert (config.backend, config.path, config.draft_model) == ("hf", model.args[0].path, draft.args[0].path)
