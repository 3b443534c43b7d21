"""Get models says what a file needs right after load and with every chat full, from the settings' estimate."""

from __future__ import annotations

from app.models.dialog import GetModelsDialog
from engine.units import format_bytes
from tests.app.models.test_dialog import dialog, open_repo  # noqa: F401 - a fixture
from tests.engine.hub.fixtures import GGUF_REPO
from tests.engine.hub.stand_in_hub import StandInHub


def test_the_needs_column_and_its_tooltip_say_both_figures(qtbot, dialog: GetModelsDialog,  # noqa: F811
                                                          hub: StandInHub) -> None:
    open_repo(qtbot, dialog, GGUF_REPO)
    assert dialog.answer is not None and dialog.answer.report is not None
    for row, fit in enumerate(dialog.answer.report.fits):
        # on the CPU the compute buffer is touched only as prompts are read: less right after load
        assert 0 < fit.after_load_bytes < fit.need_bytes
        after_load, full = format_bytes(fit.after_load_bytes), format_bytes(fit.need_bytes)
        assert dialog.files.row_texts()[row][4] == f"{after_load}, up to {full}"
        assert f"Needs about {after_load} once loaded, up to {full} with every chat full; " in \
            dialog.files.cell(row, 4).toolTip()
