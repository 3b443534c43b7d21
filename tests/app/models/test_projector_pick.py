"""Get models with a GGUF repo whose folder has two vision projectors (F16 and a larger F32): the most precise
is fetched unless the user picks the other in the box under the table; the pick changes the row's download and
its memory verdict, is what gets downloaded, and, where Automatic would load the other file beside the model,
is kept as the model's projector (the dialog's projector_chosen, as Settings' Vision projector row keeps one)."""

from __future__ import annotations

from pathlib import Path

from app.models.dialog import GetModelsDialog
from app.models.files_table import needs_text
from engine.units import format_bytes
from tests.app.models.test_dialog import CONFIG, dialog, open_repo  # noqa: F401 - a fixture
from tests.engine.hub.fixtures import PROJECTOR_F16, Q4_1, projectors  # noqa: F401 - a fixture
from tests.engine.hub.stand_in_hub import StandInHub

REPO = "stand-in/SmolVision-two-projectors-GGUF"
F32 = "mmproj-SmolVision-F32.gguf"


def test_the_user_picks_the_projector_and_the_verdict_counts_it(qtbot, dialog: GetModelsDialog,  # noqa: F811
                                                                hub: StandInHub, default_model: str, tmp_path: Path,
                                                                projectors: dict[str, Path]) -> None:  # noqa: F811
    larger = tmp_path / F32
    larger.write_bytes(projectors[PROJECTOR_F16].read_bytes() + bytes(3 << 20))  # served, never loaded here
    hub.add_repo(REPO, {Q4_1: Path(default_model), PROJECTOR_F16: projectors[PROJECTOR_F16], F32: larger,
                        "README.md": b"# two projectors\n"}, ["gguf", "image-text-to-text"])
    open_repo(qtbot, dialog, REPO)
    served = hub.repos[REPO].files
    pick = dialog.projector_pick
    assert pick.isVisible() and [pick.box.itemText(i).split(" (")[0] for i in range(pick.box.count())] == [
        PROJECTOR_F16, F32]  # F16 first, and fetched unless another is picked
    assert dialog.files.row_texts()[0][3] == format_bytes(served[Q4_1].size + served[PROJECTOR_F16].size)
    assert dialog.answer is not None and dialog.answer.report is not None
    default = dialog.answer.report.fit(Q4_1)
    pick.box.setCurrentIndex(1)
    row = dialog.files.row_texts()[0]
    choice = dialog.files.selected_choice()
    assert choice is not None
    picked = pick.applied(choice)
    assert picked.projector is not None and picked.projector.path == F32
    fit = dialog.answer.report.refit(picked, CONFIG)
    assert fit is not None and fit.need_bytes - default.need_bytes == served[F32].size - served[PROJECTOR_F16].size
    assert row[3] == format_bytes(served[Q4_1].size + served[F32].size) and row[4] == needs_text(fit)
    assert dialog.download_button.text() == f"Download {format_bytes(picked.download_bytes)}"
    pick.box.setCurrentIndex(0)  # the default first, then the larger one beside it
    with qtbot.waitSignal(dialog.downloads.finished, timeout=60_000):
        dialog.download()
    pick.box.setCurrentIndex(1)
    with qtbot.waitSignal(dialog.downloads.finished, timeout=60_000) as finished:
        dialog.download()
    assert finished.args[0].choice.projector.path == F32
    with qtbot.waitSignal(dialog.projector_chosen) as kept, qtbot.waitSignal(dialog.model_chosen) as chosen:
        dialog.use()
    path = chosen.args[0]
    assert (Path(path).parent / PROJECTOR_F16).is_file() and (Path(path).parent / F32).is_file()
    assert kept.args == [path, str(Path(path).parent / F32)]  # Automatic would load the F16 beside it
