"""Settings > Backend "Remote server": Test connection's plain results, and the API key kept out of settings.json."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Iterator

import pytest

from app.settings import secrets
from app.settings.capabilities import Capabilities, probe_capabilities
from app.settings.dialog import SettingsDialog
from app.settings.store import Settings, model_config
from app.settings.widgets import select
from engine.catalog.models import discover
from tests.engine.remote.sse_server import MODELS, FakeServer

KEY = "sk-hearth-test-0123456789"


@pytest.fixture(scope="module")
def capabilities() -> Capabilities:
    return probe_capabilities(deep=False)


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    monkeypatch.setenv("HEARTH_CONFIG_DIR", str(tmp_path / "config"))
    secrets.forget_cache()
    yield Settings.load()
    secrets.forget_cache()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(api_key=KEY) as fake:
        yield fake


@pytest.fixture
def dialog(qtbot, tmp_path: Path, settings: Settings, capabilities: Capabilities) -> SettingsDialog:  # type: ignore[no-untyped-def]
    entries = discover([], folder=tmp_path / "no-models", hf_cache=False)
    made = SettingsDialog(settings, entries=entries, capabilities=capabilities)
    qtbot.addWidget(made)
    select(made.form.backend_combo, "remote")
    return made


def test_choosing_remote_shows_its_section_instead_of_the_device(dialog: SettingsDialog) -> None:
    assert not dialog.form.remote.isHidden() and dialog.form.device_group.isHidden()
    assert dialog.current_estimate() is None  # the server's memory is not this computer's
    select(dialog.form.backend_combo, "llamacpp")
    assert dialog.form.remote.isHidden() and not dialog.form.device_group.isHidden()


def run_test(qtbot, dialog: SettingsDialog, url: str, key: str) -> str:  # type: ignore[no-untyped-def]
    section = dialog.form.remote
    section.url_edit.setText(url)
    section.key_edit.setText(key)
    with qtbot.waitSignal(section.tested, timeout=15000):
        section.test_button.click()
        assert section.result_label.text() == "Testing…" and not section.test_button.isEnabled()
    assert section.test_button.isEnabled()
    return section.result_label.text()


def test_test_connection_lists_the_models_for_the_model_choice(qtbot, dialog: SettingsDialog,  # type: ignore[no-untyped-def]
                                                              server: FakeServer) -> None:
    text = run_test(qtbot, dialog, server.url, KEY)
    assert text.startswith(f"Connected to {server.url[:-3]}") and text.endswith("2 models (fake-small, fake-large).")
    combo = dialog.form.remote.model_combo
    assert [combo.itemText(i) for i in range(combo.count())] == list(MODELS) and combo.currentText() == MODELS[0]


@pytest.mark.parametrize("case, expected", [
    ("wrong key", "refused the API key (401: Invalid API key). Check the key in Settings > Backend."),
    ("html", "answered with a web page (HTTP 200), not an OpenAI-compatible API."),
    ("404", "has no OpenAI-compatible API at /v1 (404: Not Found). Check the URL."),
    ("tls", "The TLS (https) connection to https://127.0.0.1:"),
    ("name", "The server's name in http://hearth-test.invalid:8000 could not be found."),
])
def test_test_connection_says_what_is_wrong(qtbot, dialog: SettingsDialog, server: FakeServer,  # type: ignore[no-untyped-def]
                                            case: str, expected: str) -> None:
    url, key = {"wrong key": (server.url, "wrong"), "html": (server.url.replace("/v1", "/html"), KEY),
                "404": (server.url.replace("/v1", "/nothing"), KEY),
                "tls": (server.url.replace("http:", "https:"), KEY),
                "name": ("http://hearth-test.invalid:8000/v1", KEY)}[case]
    assert expected in run_test(qtbot, dialog, url, key)
    assert dialog.form.remote.result_label.property("role") == "error"


def test_apply_keeps_the_key_out_of_settings_json(qtbot, dialog: SettingsDialog, settings: Settings,  # type: ignore[no-untyped-def]
                                                 server: FakeServer) -> None:
    run_test(qtbot, dialog, server.url, KEY)
    dialog.form.remote.model_combo.setEditText("fake-large")
    with qtbot.waitSignal(dialog.model_config_applied) as applied:
        assert dialog.apply()
    config = applied.args[0]
    assert (config.backend, config.path, config.remote_model, config.api_key) == (
        "remote", server.url[:-3], "fake-large", KEY)
    assert KEY not in repr(config)
    saved = settings.path.read_text(encoding="utf-8")
    assert KEY not in saved
    values = json.loads(saved)["settings"]
    assert (values["model.backend"], values["remote.url"], values["remote.model"]) == ("remote", server.url, "fake-large")
    assert secrets.key_file().read_text(encoding="utf-8") == KEY  # no keyring backend on this machine
    if sys.platform != "win32":
        assert stat.S_IMODE(os.stat(secrets.key_file()).st_mode) == 0o600
    assert "readable by you only" in dialog.form.remote.storage_label.text()
    secrets.forget_cache()
    assert model_config(Settings.load()).api_key == KEY  # a restart finds it again


def test_an_empty_url_is_refused_on_apply(dialog: SettingsDialog, settings: Settings) -> None:
    assert not dialog.apply()
    assert dialog.form.remote.result_label.text().startswith("Enter the remote server's URL")
    assert not settings.path.exists()


def test_a_usable_keyring_holds_the_key_instead_of_a_file(qtbot, dialog: SettingsDialog,  # type: ignore[no-untyped-def]
                                                         server: FakeServer) -> None:
    keyring = pytest.importorskip("keyring")
    from keyring.backend import KeyringBackend

    class MemoryKeyring(KeyringBackend):
        priority = 1  # type: ignore[assignment]
        stored: dict[tuple[str, str], str] = {}

        def get_password(self, service: str, username: str) -> str | None:
            return self.stored.get((service, username))

        def set_password(self, service: str, username: str, password: str) -> None:
            self.stored[(service, username)] = password

        def delete_password(self, service: str, username: str) -> None:
            self.stored.pop((service, username), None)

    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    try:
        dialog.form.remote.url_edit.setText(server.url)
        dialog.form.remote.key_edit.setText(KEY)
        assert dialog.apply()
        assert MemoryKeyring.stored == {(secrets.SERVICE, secrets.ACCOUNT): KEY}
        assert not secrets.key_file().exists()
        assert "system keyring (MemoryKeyring)" in dialog.form.remote.storage_label.text()
    finally:
        keyring.set_keyring(previous)
