"""The Tools window's built-in tools (each on/off, web ones labelled) and the memory notes dialog, on real settings
and a real history database."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from app.history.database import default_database_path
from app.history.store import HistoryStore
from app.settings.memory_notes_dialog import MemoryNotesDialog
from app.settings.store import Settings
from app.settings.tools_dialog import ToolsDialog
from app.tools.service import ToolService


def test_built_in_tools_are_off_at_first_labelled_and_turned_on_in_the_tools_window(qtbot, settings_dir: Path) -> None:  # type: ignore[no-untyped-def]
    settings = Settings.load()
    service = ToolService(settings)
    dialog = ToolsDialog(service)
    qtbot.addWidget(dialog)
    box = dialog.builtin
    assert [check.isChecked() for check in box.checks.values()] == [False, False, False, False]
    assert box.checks["web_search"].text() == "Search the web (web_search)  ·  reaches the internet"
    assert box.checks["fetch_page"].text().endswith("·  reaches the internet")
    assert "internet" not in box.checks["search_chats"].text() and "internet" not in box.checks["memory"].text()
    assert service.offered() == {}
    box.checks["fetch_page"].setChecked(True)
    assert list(service.offered()) == ["fetch_page"] and service.offered()["fetch_page"][0] == "built-in"
    assert Settings.load().get("tools.builtin_enabled") == ["fetch_page"]  # saved at once
    box.searxng.setText("localhost:8888")
    box.searxng.editingFinished.emit()
    assert settings.get("tools.searxng_url") == "" and "not saved" in box.searxng.toolTip()
    box.searxng.setText("http://localhost:8888/")
    box.searxng.editingFinished.emit()
    assert settings.get("tools.searxng_url") == "http://localhost:8888/"
    box.allowed_hosts.setText("nas.local, 192.168.1.20")
    box.allowed_hosts.editingFinished.emit()
    assert settings.get("tools.web_allowed_hosts") == ["nas.local", "192.168.1.20"]
    guard = service.builtin.all()[1].run.__self__.guard  # type: ignore[attr-defined]
    assert guard.allowed_hosts == ("nas.local", "192.168.1.20") and not guard.allow_private
    box.allow_private.setChecked(True)
    assert not box.allowed_hosts.isEnabled() and service.builtin.all()[1].run.__self__.guard.allow_private  # type: ignore[attr-defined]
    service.shutdown()


def test_the_notes_dialog_turns_off_edits_and_deletes_notes(qtbot, settings_dir: Path) -> None:  # type: ignore[no-untyped-def]
    store = HistoryStore.open(default_database_path())
    service = ToolService(Settings.load())
    notes = service.builtin.history
    first, second = notes.save("Uses metric units."), notes.save("Lives in Ghent.")
    dialog = MemoryNotesDialog(notes)
    qtbot.addWidget(dialog)
    assert [dialog.list.item(row).text() for row in range(dialog.list.count())] == ["Uses metric units.", "Lives in Ghent."]
    dialog.list.item(1).setCheckState(Qt.CheckState.Unchecked)
    assert [(note.id, note.enabled) for note in notes.notes()] == [(first.id, True), (second.id, False)]
    dialog.list.item(0).setText("Uses metric units and 24-hour time.")
    assert notes.notes()[0].text == "Uses metric units and 24-hour time."
    dialog.list.item(1).setSelected(True)
    dialog.delete_button.click()
    assert [note.text for note in notes.notes()] == ["Uses metric units and 24-hour time."]
    assert service.builtin.memory_prompt("any chat") == ""  # the memory tool itself is off
    service.shutdown()
    store.close()
