"""Settings, Tools: importing another app's mcp.json, a broken one, a server whose command does not exist."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTreeWidgetItem

from app.settings.store import Settings
from app.settings.tools_dialog import ToolsDialog
from app.tools.service import ToolService

CLAUDE_DESKTOP = {"mcpServers": {
    "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]},
    "missing": {"command": "/no/such/tool-server"},
}}


@pytest.fixture
def service(settings_dir: Path) -> Iterator[ToolService]:
    service = ToolService(Settings.load())
    yield service
    service.shutdown()


def _dialog(qtbot, service: ToolService) -> ToolsDialog:  # type: ignore[no-untyped-def]
    dialog = ToolsDialog(service)
    qtbot.addWidget(dialog)
    return dialog


def _top(dialog: ToolsDialog, index: int) -> QTreeWidgetItem:
    item = dialog.tree.topLevelItem(index)
    assert item is not None
    return item


def _rows(dialog: ToolsDialog) -> list[tuple[str, str]]:
    return [(_top(dialog, i).text(0), _top(dialog, i).text(1)) for i in range(dialog.tree.topLevelItemCount())]


def test_import_a_claude_desktop_file_lists_what_will_run(qtbot, service: ToolService, tmp_path: Path,
                                                          settings_dir: Path) -> None:  # type: ignore[no-untyped-def]
    theirs = tmp_path / "claude_desktop_config.json"
    theirs.write_text(json.dumps(CLAUDE_DESKTOP))
    dialog = _dialog(qtbot, service)
    assert _rows(dialog) == []
    dialog.import_file(str(theirs))
    assert json.loads((settings_dir / "mcp.json").read_text())["mcpServers"]["filesystem"]["command"] == "npx"
    assert _rows(dialog) == [("filesystem", "npx -y @modelcontextprotocol/server-filesystem /Users/me/Desktop"),
                             ("missing", "/no/such/tool-server")]
    _top(dialog, 0).setCheckState(0, Qt.CheckState.Unchecked)
    assert Settings.load().get("tools.disabled_servers") == ["filesystem"]
    assert [server.name for server in service.enabled_servers()] == ["missing"]


def test_a_broken_file_says_why_and_lists_nothing(qtbot, service: ToolService, settings_dir: Path) -> None:  # type: ignore[no-untyped-def]
    settings_dir.mkdir(parents=True, exist_ok=True)
    (settings_dir / "mcp.json").write_text('{"mcpServers": {"x": {"args": []}}}')
    service.reload()
    dialog = _dialog(qtbot, service)
    assert 'server "x" needs a "command"' in dialog.problem.text() and not dialog.problem.isHidden()
    assert _rows(dialog) == []


def test_a_server_whose_command_does_not_exist_says_so(qtbot, service: ToolService, settings_dir: Path) -> None:  # type: ignore[no-untyped-def]
    settings_dir.mkdir(parents=True, exist_ok=True)
    (settings_dir / "mcp.json").write_text(json.dumps({"mcpServers": {"missing": CLAUDE_DESKTOP["mcpServers"]["missing"]}}))
    service.reload()
    dialog = _dialog(qtbot, service)
    with qtbot.waitSignal(service.tools_listed, timeout=60_000):
        dialog.list_button.click()
    failed = _top(dialog, 0).child(0)
    assert failed is not None
    assert failed.text(0) == "failed" and "/no/such/tool-server was not found" in failed.text(1)
    assert service.failures() == [failed.text(1)]


def test_always_allowed_tools_are_listed_and_revoked(qtbot, service: ToolService) -> None:  # type: ignore[no-untyped-def]
    service.allow_always("files", "read")
    dialog = _dialog(qtbot, service)
    assert [dialog.allowed.item(i).text() for i in range(dialog.allowed.count())] == ["files/read"]
    dialog.allowed.item(0).setSelected(True)
    dialog.revoke_button.click()
    assert dialog.allowed.count() == 0 and Settings.load().get("tools.always_allow") == []
    assert not service.always_allowed("files", "read")


def test_settings_has_the_tools_limits_and_opens_the_tools_window(qtbot, scripted_window, settings_dir: Path) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    window.open_settings()
    settings_dialog = window._settings_dialog
    qtbot.waitUntil(lambda: not settings_dialog.scanning, timeout=30_000)
    section = settings_dialog.tools
    assert (section.timeout_spin.value(), section.result_limit_spin.value(), section.max_rounds_spin.value()) == (60, 16_000, 8)
    section.timeout_spin.setValue(5)
    section.max_rounds_spin.setValue(2)
    assert settings_dialog.apply()
    assert (Settings.load().get("tools.timeout_s"), Settings.load().get("tools.max_rounds")) == (5.0, 2)
    assert window.tool_service.settings.get("tools.timeout_s") == 5.0  # the next call is cut off after 5 s

    window.tool_service.allow_always("files", "read")
    qtbot.mouseClick(section.servers_button, Qt.MouseButton.LeftButton)
    tools = window._tools_dialog
    assert isinstance(tools, ToolsDialog) and tools.isVisible() and tools.parent() is settings_dialog
    assert [tools.allowed.item(i).text() for i in range(tools.allowed.count())] == ["files/read"]
    tools.reject()
    window._settings_dialog.reject()
