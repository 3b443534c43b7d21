"""Model > Check quantization…, driven as a person would: pick, Run, read the table, reopen, export, Cancel."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Iterator

import pytest
from PySide6.QtCore import Qt

from app.quantcheck import dialog as dialog_module
from app.quantcheck.dialog import QuantCheckDialog
from app.quantcheck.saved import checks_folder, saved_checks
from engine.catalog.models import ModelEntry, describe
from tests.engine.quantcheck.gguf_copies import requantize, swap_two_tokens

pytestmark = pytest.mark.slow
pytest.importorskip("llama_cpp")
WAIT_MS = 240_000  # two models, one chunk and two questions each: ~25 s here; a slow machine is not a hang
JSON_KEYS = {"path", "quant", "size_bytes", "mean_kld", "p99_kld", "same_top_p", "ppl", "delta_ppl",
             "answers_same_fraction", "json_valid_fraction", "tok_s", "verdict"}


@pytest.fixture(scope="module")
def q8(tmp_path_factory: pytest.TempPathFactory, default_model: str) -> str:
    return requantize(default_model, tmp_path_factory.mktemp("q8"), ("Q8_0",))[0]["Q8_0"]


@pytest.fixture
def private_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the check keeps the reference's distributions while it runs."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


class FakeChats:
    """The window's side of the memory rule, recorded (the real window is tested in tests/app/window)."""

    def __init__(self, answering: bool = False) -> None:
        self.calls: list[str] = []
        self._answering = answering

    def loaded_model(self) -> tuple[str, int] | None:
        return ("Chat model", 8 * 1024**3)

    def answering(self) -> bool:
        return self._answering

    def pause(self, reason: str) -> None:
        self.calls.append(f"pause: {reason}")

    def resume(self) -> None:
        self.calls.append("resume")


def _entries(*paths: str) -> list[ModelEntry]:
    return [ModelEntry(path, "Models folder", describe(path)) for path in paths]


@pytest.fixture
def make_dialog(qtbot) -> Iterator:  # type: ignore[no-untyped-def]
    made: list[QuantCheckDialog] = []

    def make(*paths: str, chats: FakeChats | None = None) -> QuantCheckDialog:
        dialog = QuantCheckDialog(_entries(*paths), chats)
        qtbot.addWidget(dialog)
        dialog.show()
        made.append(dialog)
        return dialog

    yield make
    for dialog in made:
        if dialog.worker.running:
            dialog.worker.cancel()
        dialog.worker.wait()


def _tick(dialog: QuantCheckDialog, name_part: str) -> None:
    for i in range(dialog.picker.candidates.count()):
        item = dialog.picker.candidates.item(i)
        if name_part in item.text():
            item.setCheckState(Qt.CheckState.Checked)
            return
    raise AssertionError(f"no candidate {name_part}")


def _quick(dialog: QuantCheckDialog, chunks: int = 1, questions: int = 2) -> None:
    dialog.inputs.chunks.setValue(chunks)
    dialog.inputs.question_limit.setValue(questions)


def test_run_shows_the_verdicts_saves_them_and_opens_them_again(
    qtbot, make_dialog, default_model: str, q8: str, private_temp: Path, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    dialog = make_dialog(default_model, q8)
    assert dialog.picker.reference_path() == default_model and not dialog.run_button.isEnabled()
    assert "Choose at least one other GGUF file" in dialog.memory_note.text()
    _tick(dialog, "Q8_0")
    _quick(dialog)
    assert dialog.run_button.isEnabled() and "holds one model at a time" in dialog.memory_note.text()
    with qtbot.waitSignal(dialog.check_finished, timeout=WAIT_MS) as finished:
        qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
        assert not dialog.run_button.isEnabled() and dialog.cancel_button.isEnabled()
    saved = finished.args[0]
    (candidate,) = saved.report.candidates
    table = dialog.results.table
    assert table.rowCount() == 1 and table.item(0, 0).text() == Path(q8).name and table.item(0, 1).text() == "Q8_0"
    assert table.item(0, 3).text() == f"{candidate.agreement.mean_kld:.4f}" and 0 < candidate.agreement.mean_kld < 0.05
    assert table.item(0, 12).toolTip() == candidate.verdict.text and candidate.verdict.text.startswith("fine to use")
    assert table.item(0, 12).text() == candidate.verdict.text.split(", ")[0] + " …"  # the deciding finding
    assert "Reference: " in dialog.results.answers.toPlainText() and "1. What is the capital of France?" in \
        dialog.results.answers.toPlainText()
    assert dialog.status.text().startswith("Done in") and dialog.progress.value() == 1000
    assert saved.path.parent == checks_folder() == tmp_path / "data" / "quantization-checks"
    assert list(private_temp.iterdir()) == [], "the reference's distributions are gone"

    again = make_dialog(default_model, q8)
    assert again.saved.count() == 1 and again.results.report is None
    again.saved.activated.emit(0)
    assert again.results.table.item(0, 3).text() == table.item(0, 3).text()
    again.export_to(tmp_path / "out.json", "json")
    again.export_to(tmp_path / "out.md", "markdown")
    exported = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert set(exported["candidates"][0]) == JSON_KEYS and exported["reference"]["path"] == default_model
    markdown = (tmp_path / "out.md").read_text(encoding="utf-8")
    assert "| candidate | quant | size | mean KLD |" in markdown and candidate.verdict.text in markdown


def test_cancel_stops_the_check_and_saves_nothing(
    qtbot, make_dialog, default_model: str, q8: str, private_temp: Path  # type: ignore[no-untyped-def]
) -> None:
    dialog = make_dialog(default_model, q8)
    _tick(dialog, "Q8_0")  # the whole text: eight chunks per model, far more than it gets to
    seen: list[str] = []
    dialog.worker.progressed.connect(lambda fraction, message: seen.append(message))
    dialog.run_button.click()
    qtbot.waitUntil(lambda: any("text chunk 1 of 8" in m for m in seen), timeout=WAIT_MS)
    with qtbot.waitSignal(dialog.check_cancelled, timeout=WAIT_MS):
        qtbot.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    assert dialog.status.text() == "Cancelled: nothing was saved." and dialog.run_button.isEnabled()
    assert not any("text chunk 2 of 8" in m for m in seen), "Cancel stopped the chunk being decoded"
    assert not any("Q8_0.gguf" in m for m in seen), "it stopped before the candidate"
    assert saved_checks() == [] and dialog.saved.count() == 0
    assert list(private_temp.iterdir()) == []


def test_a_candidate_with_another_tokenizer_is_refused_in_the_dialog(
    qtbot, make_dialog, default_model: str, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    other = tmp_path / "other-tokenizer.gguf"
    swap_two_tokens(default_model, other, 300, 301)
    dialog = make_dialog(default_model, str(other))
    _tick(dialog, "other-tokenizer")
    with qtbot.waitSignal(dialog.check_failed, timeout=WAIT_MS):
        dialog.run_button.click()
    assert "has a different tokenizer from the reference" in dialog.error.text()
    assert dialog.status.text() == "The check stopped." and saved_checks() == []


def test_when_memory_is_short_the_chats_model_makes_room_and_comes_back(
    qtbot, make_dialog, default_model: str, q8: str, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setattr(dialog_module, "free_memory", lambda: 600 * 1024**2)
    busy = FakeChats(answering=True)
    dialog = make_dialog(default_model, q8, chats=busy)
    _tick(dialog, "Q8_0")
    assert "not enough beside Chat model, so the chats' model is unloaded" in dialog.memory_note.text()
    dialog.run_button.click()
    assert "A chat is still answering" in dialog.error.text() and busy.calls == [] and not dialog.worker.running

    chats = FakeChats()
    dialog = make_dialog(default_model, q8, chats=chats)
    _tick(dialog, "Q8_0")
    _quick(dialog, questions=1)
    with qtbot.waitSignal(dialog.check_finished, timeout=WAIT_MS):
        dialog.run_button.click()
        assert chats.calls == ["pause: Paused while a quantization check runs (Model > Check quantization…)."]
    assert chats.calls[-1] == "resume" and len(chats.calls) == 2


def test_a_folder_reference_offers_bitsandbytes_modes(make_dialog, default_model: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dialog = make_dialog(default_model)
    assert not any(box.isEnabled() for box in dialog.picker.modes.values())
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}", encoding="utf-8")
    dialog.picker.choose_reference(str(folder))
    assert all(box.isEnabled() for box in dialog.picker.modes.values())
    assert dialog.picker.candidates.count() == 0, "GGUF files are not candidates for a folder"
    assert dialog.picker.selection() == "Choose a bitsandbytes mode or another folder to compare with the reference."
    dialog.picker.modes["nf4"].setChecked(True)
    reference, candidates = dialog.picker.selection()  # type: ignore[misc]
    assert reference.backend == "hf" and [(c.path, c.quantization) for c in candidates] == [(str(folder), "nf4")]


def test_a_users_question_file_is_checked_before_anything_runs(make_dialog, default_model: str, q8: str,  # type: ignore[no-untyped-def]
                                                               tmp_path: Path) -> None:
    from app.quantcheck.inputs_form import set_source

    few = tmp_path / "mine.txt"
    few.write_text("What is 2 + 2?\nName a colour.\n", encoding="utf-8")
    dialog = make_dialog(default_model, q8)
    _tick(dialog, "Q8_0")
    set_source(dialog.inputs.question_source, str(few))
    assert dialog.inputs.question_source.currentText() == "mine.txt"
    dialog.run_button.click()
    assert "mine.txt has 2 questions; give 20 to 50" in dialog.error.text() and not dialog.worker.running
    dialog.inputs.question_limit.setValue(2)  # a deliberately short run may ask fewer
    assert [q.prompt for q in dialog.build_spec().questions] == ["What is 2 + 2?", "Name a colour."]
    set_source(dialog.inputs.question_source, "")
    assert len(dialog.build_spec().questions) == 2 and dialog.build_spec().questions[0].kind == "fact"


def test_models_found_after_opening_fill_in_and_keep_what_was_chosen(make_dialog, default_model: str,  # type: ignore[no-untyped-def]
                                                                      q8: str) -> None:
    dialog = make_dialog()
    assert dialog.memory_note.text() == "Choose a reference model." and not dialog.run_button.isEnabled()
    dialog.set_library(_entries(default_model))
    assert dialog.picker.reference_path() == default_model and dialog.picker.candidates.count() == 0
    dialog.picker.add_candidate(q8)
    dialog.set_library(_entries(default_model, q8))  # a later scan finds the same files again
    assert dialog.picker.reference.count() == 1 + 1 and dialog.picker.candidates.count() == 1
    assert dialog.picker.candidates.item(0).checkState() == Qt.CheckState.Checked and dialog.run_button.isEnabled()


def test_a_dialog_deleted_mid_run_stops_its_check_and_saves_nothing(  # type: ignore[no-untyped-def]
    qtbot, default_model: str, q8: str, private_temp: Path
) -> None:
    import shiboken6

    dialog = QuantCheckDialog(_entries(default_model, q8))
    _tick(dialog, "Q8_0")
    seen: list[str] = []
    dialog.worker.progressed.connect(lambda fraction, message: seen.append(message))
    dialog.run_button.click()
    qtbot.waitUntil(lambda: any("text chunk 1 of 8" in m for m in seen), timeout=WAIT_MS)
    worker = dialog.worker
    shiboken6.delete(dialog)  # as when its window is destroyed with the check still running
    assert worker.wait(60), "the check noticed nobody listens any more and stopped"
    assert saved_checks() == [] and list(private_temp.iterdir()) == []
