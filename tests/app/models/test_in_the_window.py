"""Get models from the window (Model > Get models…, the status bar) and from Settings (the button, the
Downloaded entries with their size, Delete): the real window and dialogs against the stand-in Hub."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from app.settings.capabilities import probe_capabilities
from app.settings.dialog import SettingsDialog
from app.settings.store import Settings
from engine.catalog.hf_cache import downloaded_models
from engine.catalog.models import discover
from tests.engine.hub.fixtures import GGUF_REPO, Q4_0
from tests.engine.hub.stand_in_hub import StandInHub


def menu_action(window, menu: str, text: str):
    bar = window.menuBar()
    found = next(a for a in bar.actions() if a.text().replace("&", "") == menu)
    return next(a for a in found.menu().actions() if a.text().replace("&", "") == text)


def test_get_models_from_the_menu_downloads_and_loads_the_model(qtbot, make_window, hub: StandInHub,
                                                               hub_env: Path) -> None:
    window = make_window(context_length=1024, slots=2)
    assert window.get_models.indicator.isHidden()  # nothing downloading: nothing in the status bar
    menu_action(window, "Model", "Get models…").trigger()
    dialog = window.get_models.dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.config.context_length == 1024 and dialog.config.slots == 2  # sized for the user's settings
    dialog.query.setText(GGUF_REPO)
    qtbot.keyClick(dialog.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: dialog.answer is not None, timeout=20_000)
    assert "2 chats of 1,024 tokens" in dialog.memory_label.text()
    dialog.files.selectRow(2)
    with qtbot.waitSignal(window.get_models.downloads.finished, timeout=60_000):
        qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)
    path = dialog.downloaded.path
    with qtbot.waitSignal(window.bridge.model_loaded, timeout=60_000) as loaded:
        qtbot.mouseClick(dialog.use_button, Qt.MouseButton.LeftButton)
    assert loaded.args[0].path == path and loaded.args[0].quantization == "Q4_0"
    assert window.get_models.dialog is None  # closed on Use
    saved = Settings.load()
    assert saved.get("model.path") == path and saved.get("model.backend") == "llamacpp"
    assert saved.get("model.recent")[0] == path


def test_settings_offers_get_models_and_deletes_a_downloaded_model(qtbot, hub: StandInHub, hub_env: Path,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    from engine.hub.download import fetch_choice
    from engine.hub.listing import list_repo
    from engine.hub.settings import HubSettings

    settings = HubSettings.from_env()
    listing = list_repo(GGUF_REPO, settings)
    path = fetch_choice(listing, listing.choice(Q4_0), settings)
    entries = discover(folder=tmp_path / "no-models")
    dialog = SettingsDialog(Settings.load(), entries=entries, capabilities=probe_capabilities(deep=False))
    qtbot.addWidget(dialog)
    texts = dialog.models.texts()
    [downloaded] = [text for text in texts if "(Downloaded)" in text]
    assert downloaded.startswith("SmolLM2-135M-Instruct.Q4_0  (Downloaded)") and "87 MiB" in downloaded
    with qtbot.waitSignal(dialog.get_models_requested):
        qtbot.mouseClick(next(b for b in dialog.models.findChildren(type(dialog.models.delete_button))
                              if b.text() == "Get models..."), Qt.MouseButton.LeftButton)
    dialog.models.list.setCurrentRow(texts.index(downloaded))
    assert dialog.models.delete_button.isEnabled()
    asked: list[str] = []

    def answer(parent: object, title: str, text: str) -> QMessageBox.StandardButton:
        asked.append(text)
        return QMessageBox.StandardButton.Yes

    monkeypatch.setattr(QMessageBox, "question", answer)
    with qtbot.waitSignal(dialog.models.model_deleted) as deleted:
        qtbot.mouseClick(dialog.models.delete_button, Qt.MouseButton.LeftButton)
    assert deleted.args == [path] and "87 MiB" in asked[0] and path in asked[0]
    assert not Path(path).exists() and downloaded_models() == []
    assert not any("(Downloaded)" in text for text in dialog.models.texts())
    assert "87 MiB freed" in dialog.models.metadata_label.text()
    dialog.models.list.setCurrentRow(0)  # the bundled model is not a download: it cannot be deleted here
    assert not dialog.models.delete_button.isEnabled()
