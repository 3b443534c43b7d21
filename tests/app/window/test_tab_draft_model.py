"""A model chosen in a tab's picker loads with the draft model the settings keep for it (model.draft_models),
as the window's own model does, and never with another model's."""

from __future__ import annotations

from app.models.library import LibraryModel

DEFAULT = "/models/test.gguf"
OTHER = "/models/other-Q8_0.gguf"
THIRD = "/models/third-Q4_0.gguf"
DRAFT = "/models/other-0.5B-Q8_0.gguf"
LIBRARY = [LibraryModel(DEFAULT, "Test model", "fits", ""), LibraryModel(OTHER, "Other model", "fits", ""),
           LibraryModel(THIRD, "Third model", "fits", "")]


def test_a_model_picked_in_a_tab_loads_with_its_own_draft_model(qtbot, scripted_window) -> None:
    window = scripted_window()
    window.settings.set("model.draft_models", {OTHER: DRAFT})
    window.tab_models.set_library(LIBRARY)
    first, second = window.current_tab(), window.new_chat()
    first.model_picker.choose(OTHER)
    config, _ = window.bridge.loads[-1]
    assert (config.path, config.draft_model) == (OTHER, DRAFT)
    second.model_picker.choose(THIRD)
    config, _ = window.bridge.loads[-1]
    assert (config.path, config.draft_model) == (THIRD, None), "a draft model belongs to the model it was chosen for"
