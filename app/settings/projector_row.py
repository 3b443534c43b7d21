"""The settings' vision projector row: the mmproj GGUF a llama.cpp model sees pictures through.

Automatic (the default) is an mmproj-*.gguf beside the model, as llama.cpp's repos ship it and Get models
fetches it; "Choose…" names one elsewhere, as llama-server's --mmproj does. The choice belongs to the model
(settings key model.projectors: model path -> projector path), so another model is never loaded with it.
"""

from __future__ import annotations

from pathlib import Path

from app.settings.model_file_row import ModelFileRow
from engine.images import projector_beside


class ProjectorRow(ModelFileRow):
    KEY = "model.projectors"
    DIALOG_TITLE, DIALOG_FILTER = "Choose the vision projector", "Vision projectors (*.gguf);;All files (*)"
    CHOOSE_TIP = "A vision projector (mmproj GGUF) made for this model, as llama-server's --mmproj."
    CLEAR_TEXT, CLEAR_TIP = "Automatic", "Use an mmproj-*.gguf in the model's folder, if there is one."

    def describe(self, chosen: str) -> tuple[str, str]:
        if chosen:
            return Path(chosen).name, chosen
        if (beside := projector_beside(self.model_path)):
            return f"automatic: {beside} beside the model", str(Path(self.model_path).parent / beside)
        return "none: this model reads text only", "Choose its mmproj GGUF to let it see pictures."
