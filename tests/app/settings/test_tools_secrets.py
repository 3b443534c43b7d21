"""Secrets of mcp.json kept in the keyring: Import points them out, one button moves them, a started server gets them.

The keyring is this test's own (a memory one), or none (the private-file fallback): never the user's vault.
The server is the real stdio one of tests/engine/tools, whose `env` tool says what it was given.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.settings import secrets
from engine.tools.builtin.base import framed_text, untrusted_source
from app.settings.store import Settings
from app.settings.tools_dialog import ToolsDialog
from app.tools.service import ToolService
from tests.engine.tools.conftest import SERVER_SCRIPT

TOKEN = "s3cret-value-42"
WAIT_MS = 60_000


class MemoryKeyring:
    """What `secrets._keyring()` returns: the keyring module's calls, kept in a dict."""

    def __init__(self) -> None:
        self.stored: dict[tuple[str, str], str] = {}

    def get_keyring(self) -> MemoryKeyring:
        return self

    def get_password(self, service: str, account: str) -> str | None:
        return self.stored.get((service, account))

    def set_password(self, service: str, account: str, password: str) -> None:
        self.stored[(service, account)] = password

    def delete_password(self, service: str, account: str) -> None:
        self.stored.pop((service, account), None)


@pytest.fixture(params=["file", "keyring"])
def vault(request: pytest.FixtureRequest, settings_dir: Path, monkeypatch: pytest.MonkeyPatch) -> MemoryKeyring | None:
    ring = MemoryKeyring() if request.param == "keyring" else None
    monkeypatch.setattr(secrets, "_keyring", lambda: ring)
    return ring


@pytest.fixture
def service(vault: Any) -> Iterator[ToolService]:
    service = ToolService(Settings.load())
    yield service
    service.shutdown()


def _their_file(folder: Path) -> Path:
    theirs = folder / "claude_desktop_config.json"
    server = {"command": sys.executable, "args": [str(SERVER_SCRIPT), str(folder)]}
    theirs.write_text(json.dumps({"mcpServers": {
        "probe": {**server, "env": {"PROBE_TOKEN": TOKEN, "DEBUG": "1"}},
        "unkeyed": {**server, "env": {"PROBE_TOKEN": "${keyring:never.stored}"}},
    }}))
    return theirs


def test_import_offers_the_keyring_and_the_started_server_gets_the_secret(
        qtbot, service: ToolService, vault: MemoryKeyring | None, settings_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dialog = ToolsDialog(service)
    qtbot.addWidget(dialog)
    assert dialog.secrets_button.isHidden()
    dialog.import_file(str(_their_file(tmp_path)))
    assert not dialog.secrets_button.isHidden()
    assert dialog.secrets_note.text() == "Written in plain text in mcp.json, and they look like secrets: PROBE_TOKEN of probe."
    shown = [dialog.tree.topLevelItem(i) for i in range(dialog.tree.topLevelItemCount())]
    assert [item.text(0) for item in shown if item] == ["probe", "unkeyed"]
    assert all(TOKEN not in item.text(1) for item in shown if item)  # the command line never shows it

    dialog.secrets_button.click()
    mcp_json = (settings_dir / "mcp.json").read_text()
    assert TOKEN not in mcp_json
    assert json.loads(mcp_json)["mcpServers"]["probe"]["env"] == {"DEBUG": "1", "PROBE_TOKEN": "${keyring:probe.PROBE_TOKEN}"}
    assert dialog.secrets_button.isHidden() and "1 secret(s) moved out of mcp.json" in dialog.secrets_note.text()
    kept = settings_dir / "mcp_secret_probe.PROBE_TOKEN"
    if vault is None:
        assert kept.read_text() == TOKEN and "files readable by you only" in dialog.secrets_note.text()
        if sys.platform != "win32":
            assert stat.S_IMODE(os.stat(kept).st_mode) == 0o600
    else:
        assert vault.stored == {(secrets.SERVICE, "mcp:probe.PROBE_TOKEN"): TOKEN} and not kept.exists()
        assert "system keyring (MemoryKeyring)" in dialog.secrets_note.text()
    assert not (settings_dir / "settings.json").exists() or TOKEN not in (settings_dir / "settings.json").read_text()

    secrets.forget_cache()  # what a restart reads: the keyring or the file, not this run's memory
    with qtbot.waitSignal(service.tools_listed, timeout=WAIT_MS, check_params_cb=lambda t: t.server == "probe"):
        service.list_server("probe")
    with qtbot.waitSignal(service.call_finished, timeout=WAIT_MS) as finished:
        service.call("t", "probe", "env", '{"name": "PROBE_TOKEN"}')
    # the child was started with the secret's value (which reaches the model framed as the server's data)
    assert framed_text(finished.args[1].text) == TOKEN and untrusted_source(finished.args[1].text)

    with qtbot.waitSignal(service.tools_listed, timeout=WAIT_MS, check_params_cb=lambda t: t.server == "unkeyed"):
        service.list_server("unkeyed")
    (failure,) = service.failures()
    assert failure.startswith('The tool server "unkeyed" (') and TOKEN not in failure
    assert 'needs the secret "never.stored" from the keyring, which is not stored' in failure
    assert [spec.name for spec in service.listed["probe"].tools][:1] == ["add"]  # the other server works on
