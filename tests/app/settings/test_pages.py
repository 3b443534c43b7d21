"""Settings on a small screen: every control of the real dialog can be reached at 1280x720 and 1366x768, OK and
Apply stay in view, and a problem found on Apply turns to the page that shows it."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QDialogButtonBox,
    QLineEdit,
    QListWidget,
    QPlainTextEdit,
    QScrollArea,
    QWidget,
)

from app.settings.capabilities import probe_capabilities
from app.settings.dialog import SettingsDialog
from app.settings.pages import DECORATIONS
from app.settings.store import Settings
from app.settings.widgets import select
from engine.catalog.models import discover

CONTROLS = (QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit, QPlainTextEdit, QListWidget)
TASK_BAR = 32
SCREENS = {"1280x720": QRect(0, TASK_BAR, 1280, 720 - TASK_BAR), "1366x768": QRect(0, TASK_BAR, 1366, 768 - TASK_BAR)}


@pytest.fixture
def dialog(qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SettingsDialog:
    monkeypatch.setenv("HEARTH_CONFIG_DIR", str(tmp_path / "config"))
    settings = Settings.load()
    entries = discover([], folder=tmp_path / "no-models", hf_cache=False)  # the bundled model's header only
    made = SettingsDialog(settings, entries=entries, capabilities=probe_capabilities(deep=False))
    qtbot.addWidget(made)
    return made


def _in_dialog(dialog: SettingsDialog, widget: QWidget) -> QRect:
    return QRect(widget.mapTo(dialog, QPoint(0, 0)), widget.size())


def _controls(dialog: SettingsDialog) -> list[QWidget]:
    """Every input on a page that its page shows (rows of another backend are hidden on purpose)."""
    found = []
    for control in dialog.findChildren(QWidget):
        page = dialog.pages.page_of(control)
        if isinstance(control, CONTROLS) and page >= 0 and control.isVisibleTo(dialog.pages.stack.widget(page)):
            found.append(control)
    return found


def _assert_reachable(dialog: SettingsDialog, control: QWidget) -> None:
    dialog.pages.reveal(control)
    QApplication.processEvents()
    page = dialog.pages.stack.currentWidget()
    assert isinstance(page, QScrollArea) and page.isAncestorOf(control)
    viewport = _in_dialog(dialog, page.viewport())
    if page.widget().height() > page.viewport().height():
        assert page.verticalScrollBar().isVisible()  # reachable by mouse too, not only by Tab
    assert control.isVisible() and viewport.contains(_in_dialog(dialog, control)), control.objectName() or control


@pytest.mark.parametrize("screen", SCREENS.values(), ids=SCREENS.keys())
def test_every_control_is_reachable_on_a_small_screen(qtbot, dialog: SettingsDialog, screen: QRect) -> None:
    dialog.fit_to(screen)
    dialog.show()
    qtbot.waitExposed(dialog)
    assert dialog.height() <= screen.height() - DECORATIONS.height()
    assert dialog.width() <= screen.width() - DECORATIONS.width()
    reached: list[QWidget] = []
    for backend in ("llamacpp", "hf", "remote"):  # each shows rows the others hide
        select(dialog.form.backend_combo, backend)
        QApplication.processEvents()  # the layout settles: a page may gain its scroll bar
        for control in _controls(dialog):
            _assert_reachable(dialog, control)
            for button in dialog.buttons.buttons():
                assert button.isVisible() and dialog.rect().contains(_in_dialog(dialog, button))
            reached.append(control)
    for wanted in (dialog.form.temperature_spin, dialog.form.system_prompt_edit, dialog.server.port_spin,
                   dialog.several.aliases_edit, dialog.tools.servers_button, dialog.documents.mode_combo,
                   dialog.form.remote.url_edit, dialog.form.quant_combo, dialog.form.kv_type_combo,
                   dialog.form.context_spin, dialog.models.list, dialog.form.projector_row.choose_button):
        assert wanted in reached
    assert len(set(reached)) > 50


def test_the_wanted_size_needs_no_scrolling_where_the_screen_allows(qtbot, dialog: SettingsDialog) -> None:
    dialog.fit_to(QRect(0, 0, 2560, 1440))
    dialog.show()
    qtbot.waitExposed(dialog)
    assert dialog.height() < 1000  # was ~1,100 in one column
    for index in range(dialog.pages.stack.count()):
        dialog.pages.show_page(index)
        QApplication.processEvents()
        page = dialog.pages.stack.widget(index)
        assert isinstance(page, QScrollArea) and not page.verticalScrollBar().isVisible(), dialog.pages.page_names()[index]


def test_a_problem_on_apply_turns_to_its_page(qtbot, dialog: SettingsDialog) -> None:
    dialog.show()
    qtbot.waitExposed(dialog)
    assert dialog.pages.page_names()[dialog.pages.names.currentRow()] == "Model"
    dialog.several.aliases_edit.setPlainText("gpt-4o")
    assert dialog.apply() is False
    assert dialog.pages.page_names()[dialog.pages.names.currentRow()] == "Several models"
    assert dialog.several.problem_label.isVisible() and "name=model" in dialog.several.problem_label.text()
    assert not dialog.memory.isHidden()  # the estimate belongs to this page too
    dialog.pages.show_page(dialog.pages.page_names().index("Local API"))
    assert dialog.memory.isHidden()  # not to the API's
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert ok.isVisible()


def test_a_remote_backend_has_no_device_page(qtbot, dialog: SettingsDialog) -> None:
    device = dialog.pages.page_names().index("Device and context")
    dialog.pages.show_page(device)
    select(dialog.form.backend_combo, "remote")
    assert dialog.pages.names.item(device).isHidden() and dialog.pages.names.currentRow() == 0
    select(dialog.form.backend_combo, "llamacpp")
    assert not dialog.pages.names.item(device).isHidden()
