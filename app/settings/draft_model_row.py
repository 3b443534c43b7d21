"""The settings' draft model row, under Speculative decoding: a smaller model of the same vocabulary whose guesses
the model checks, as llama-server's --model-draft. A GGUF for a model llama.cpp loads; a transformers folder for
one the transformers backend loads, a GGUF read through transformers included (engine/catalog/draft_kind.py).

The choice belongs to the model (settings key model.draft_models: model path -> draft model path), since a
draft model must share its model's vocabulary; loading says why where it does not.
"""

from __future__ import annotations

from pathlib import Path

from app.settings.model_file_row import ModelFileRow
from engine.catalog.draft_kind import draft_for, is_gguf_name

GGUF_TIP = ("A smaller GGUF model of the same family (the same vocabulary) that guesses the next tokens "
            "for this model to check, as llama-server's --model-draft.")
FOLDER_TIP = ("A smaller transformers model folder of the same family (the same tokenizer) that guesses the next "
              "tokens for this model to check; its vocabulary is checked when the model loads.")


class DraftModelRow(ModelFileRow):
    KEY = "model.draft_models"
    DIALOG_TITLE, DIALOG_FILTER = "Choose the draft model", "GGUF models (*.gguf);;All files (*)"
    CHOOSE_TIP = GGUF_TIP
    CLEAR_TEXT, CLEAR_TIP = "None", "No draft model: guesses come from the conversation only."
    AFTER_PROBLEM = "Draft model: "
    backend = "llamacpp"

    def set_backend(self, backend: str) -> None:
        """The backend the model loads with decides what drafts for it: a GGUF for llama.cpp, a folder for hf."""
        if backend == self.backend:
            return
        self.backend, self.wants_folder, self.problem = backend, backend == "hf", ""
        self.DIALOG_TITLE = "Choose the draft model's folder" if self.wants_folder else "Choose the draft model"
        self.choose_button.setToolTip(FOLDER_TIP if self.wants_folder else GGUF_TIP)
        self._show()

    def describe(self, chosen: str) -> tuple[str, str]:
        if not chosen:
            return "none", ""
        if draft_for(self.backend, chosen) is None:  # chosen while the model loaded with the other backend
            kind = "a GGUF, for llama.cpp" if is_gguf_name(chosen) else "a transformers folder, for transformers"
            return f"none: {Path(chosen).name} is {kind}", chosen
        return Path(chosen).name, chosen
