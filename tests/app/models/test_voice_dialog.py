"""Get voice models from Settings > Voice, against the stand-in Hub serving the real test models: the speech model
and the voice are listed with their sizes, a filter finds a language, Download fetches one verified (Cancel stops
it), and Use fills the page's field with a path the page accepts."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.settings.voice_section import VoiceSection
from engine.hub.voice_models import VoiceChoice
from tests.engine.hub.stand_in_hub import StandInHub
from tests.engine.hub.voice_fixtures import JOE, PIPER_REPO, WHISPER_REPO

MISSING = "hearth-test/no-such-voices"
LONG = 60_000


def rows(dialog) -> list[tuple[str, bool]]:  # type: ignore[no-untyped-def]
    return [(dialog.list.item(row).text(), dialog.list.item(row).isHidden()) for row in range(dialog.list.count())]


def select(dialog, name: str) -> None:  # type: ignore[no-untyped-def]
    item = next(dialog.list.item(row) for row in range(dialog.list.count()) if dialog.list.item(row).text()
                .startswith(name))
    dialog.list.setCurrentItem(item)


def test_list_filter_download_and_use_both_kinds(qtbot, voice_hub: StandInHub,  # type: ignore[no-untyped-def]
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.models.voice_dialog.SUGGESTED_REPOS", (WHISPER_REPO, PIPER_REPO, MISSING))
    section = VoiceSection()
    qtbot.addWidget(section)
    dialog = section.open_get_voice_models()
    qtbot.waitUntil(lambda: dialog.listing_repos == 0, timeout=LONG)
    joe: VoiceChoice = dialog.list.item(1).data(Qt.ItemDataRole.UserRole)[1]
    assert rows(dialog) == [("faster-whisper-base · speech to text · 141 MiB to download · about 194 MiB of RAM",
                             False), (joe.line(), False)]
    assert MISSING in dialog.status.text() and dialog.status.styleSheet()  # said, in red; the rest still listed
    dialog.filter_edit.setText("en_us")
    assert [hidden for _, hidden in rows(dialog)] == [True, False]
    select(dialog, "en_US-joe-medium")
    assert dialog.download_button.isEnabled() and not dialog.use_button.isEnabled()
    qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)
    assert not dialog.download_button.isEnabled() and dialog.progress.isVisible()
    qtbot.waitUntil(lambda: dialog.list.item(1).text().endswith(" · downloaded"), timeout=LONG)
    assert "downloaded and verified" in dialog.status.text() and not dialog.progress.isVisible()
    assert voice_hub.bytes_served(PIPER_REPO) == joe.download_bytes
    qtbot.mouseClick(dialog.use_button, Qt.MouseButton.LeftButton)
    assert section.voice_edit.text().endswith(JOE) and section.problem() == ""  # the page takes it as it is
    dialog.filter_edit.setText("")
    select(dialog, "faster-whisper-base")
    qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.list.item(0).text().endswith(" · downloaded"), timeout=LONG)
    qtbot.mouseClick(dialog.use_button, Qt.MouseButton.LeftButton)
    folder = Path(section.model_edit.text())  # the snapshot folder, named by the commit
    assert folder.name == voice_hub.repos[WHISPER_REPO].commit and (folder / "model.bin").is_file()
    assert section.problem() == ""
    dialog.close()


def test_cancel_stops_a_download_and_keeps_it_undone(qtbot, voice_hub: StandInHub) -> None:  # type: ignore[no-untyped-def]
    from app.models.voice_dialog import VoiceModelsDialog

    voice_hub.faults.bytes_per_second = 4 << 20  # 4 MiB/s: the speech model takes half a minute
    dialog = VoiceModelsDialog(repos=[WHISPER_REPO])
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitUntil(lambda: dialog.listing_repos == 0, timeout=LONG)
    select(dialog, "faster-whisper-base")
    with qtbot.waitSignal(dialog._progressed, timeout=LONG):
        qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)
    assert dialog.cancel_button.isVisible()
    qtbot.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not dialog.progress.isVisible(), timeout=LONG)
    assert "cancel" in dialog.status.text().lower() and dialog.status.styleSheet()
    assert not dialog.list.item(0).text().endswith(" · downloaded") and dialog.download_button.isEnabled()
    assert voice_hub.bytes_served(WHISPER_REPO) < 100 << 20
    dialog.close()


def test_get_models_offers_them_and_use_sets_the_voice_settings(qtbot, voice_hub: StandInHub,  # type: ignore[no-untyped-def]
                                                                 tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from PySide6.QtWidgets import QWidget

    from app.models.launcher import GetModels
    from app.settings.store import Settings
    from engine.protocol import ModelConfig

    monkeypatch.setattr("app.models.voice_dialog.SUGGESTED_REPOS", (PIPER_REPO,))
    window = QWidget()
    qtbot.addWidget(window)
    settings = Settings(tmp_path / "config" / "settings.json")
    launcher = GetModels(window, settings)
    try:
        get_models = launcher.open(ModelConfig(path=""))
        qtbot.mouseClick(get_models.voice_button, Qt.MouseButton.LeftButton)
        dialog = launcher.voice_dialog
        assert dialog is not None and dialog.isVisible()
        qtbot.waitUntil(lambda: dialog.listing_repos == 0, timeout=LONG)
        select(dialog, "en_US-joe-medium")
        qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: dialog.use_button.isEnabled(), timeout=LONG)
        qtbot.mouseClick(dialog.use_button, Qt.MouseButton.LeftButton)
        assert settings.get("voice.tts_voice").endswith(JOE) and settings.get("voice.stt_model") == ""
        assert Settings.load(tmp_path / "config" / "settings.json").get("voice.tts_voice") == \
            settings.get("voice.tts_voice")  # saved
        dialog.close()
    finally:
        launcher.shutdown()
