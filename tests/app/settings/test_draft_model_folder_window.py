"""The real window with a transformers model and a draft model chosen in Settings > Draft model: the row picks a
folder, Apply loads the model with it (the status and the gauge name it), and a draft model of another
vocabulary is refused at load with the reason, in the dialog and the status line."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")
pytestmark = [pytest.mark.hf, pytest.mark.slow]


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """(the model, a draft of its tokenizer with other random weights, a draft whose tokenizer has one more
    special token, which moves every later id): tiny Llamas built in code (tests/engine/runners/hf/tiny_hf.py)."""
    from tests.engine.runners.hf.tiny_hf import build_tiny_llama

    folder = tmp_path_factory.mktemp("tiny_drafts")
    return (str(build_tiny_llama(folder / "tiny-llama")), str(build_tiny_llama(folder / "draft-llama", seed=1)),
            str(build_tiny_llama(folder / "think-llama", extra_special=["<think>"])))


def test_a_folder_chosen_as_draft_model_loads_beside_a_transformers_model(
        qtbot, make_window, tiny_models: tuple[str, str, str]) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDialogButtonBox

    model, draft, other_vocabulary = tiny_models
    window = make_window()
    window.open_settings()
    dialog = window._settings_dialog
    qtbot.waitUntil(dialog.isVisible)
    assert dialog.open_model(model)
    form, row = dialog.form, dialog.form.draft_model_row
    assert form.backend_combo.currentData() == "hf"
    assert form.sampling_form.isRowVisible(row) and row.wants_folder and row.label.text() == "none"
    before = dialog.current_estimate()
    assert before is not None and before.draft_model_bytes == 0
    assert row.choose(draft)
    counted = dialog.current_estimate()
    assert counted is not None and counted.draft_model_bytes > 0
    apply = dialog.buttons.button(QDialogButtonBox.StandardButton.Apply)
    with qtbot.waitSignal(window.bridge.model_loaded, timeout=60_000) as loaded:
        qtbot.mouseClick(apply, Qt.MouseButton.LeftButton)
    info = loaded.args[0]
    assert (info.path, info.backend, info.draft_model) == (model, "hf", "draft-llama") and info.draft_model_bytes > 0
    assert window.model.config_in_effect.draft_model == draft
    assert window.settings.get("model.draft_models") == {model: draft}
    qtbot.waitUntil(lambda: window.gauge.model is not None and window.gauge.model.draft_model == "draft-llama")
    parts = {part.name: part.size for part in window.gauge.memory_bar.parts}
    assert parts.get("draft model draft-llama", 0) > 0, parts
    assert "draft model draft-llama" in window.gauge.details_html()

    assert row.choose(other_vocabulary)
    with qtbot.waitSignal(window.bridge.model_load_failed, timeout=60_000) as failed:
        qtbot.mouseClick(apply, Qt.MouseButton.LeftButton)
    reason = "Token 3 is '<think>' in the draft model think-llama but"
    assert reason in failed.args[0]
    assert reason in dialog.models.error_label.text()
    assert reason in window.model.label.text() or reason in window.model.reason
    dialog.reject()
