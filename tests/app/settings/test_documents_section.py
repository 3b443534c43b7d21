"""The settings' Documents section: words only by default, a GGUF embedding model or the chat's model, and a
file that is not a GGUF refused before anything is saved."""

from __future__ import annotations

from pathlib import Path

from app.settings.documents_section import DocumentsSection
from app.settings.store import Settings
from app.settings.widgets import select


def test_load_collect_and_what_is_refused(qtbot, tmp_path: Path, default_model: str) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(tmp_path / "settings.json", {})
    section = DocumentsSection()
    qtbot.addWidget(section)
    section.show()
    section.load(settings)
    assert section.mode_combo.currentData() == "off" and not section.model_edit.isVisible()
    assert section.problem() == ""
    select(section.mode_combo, "gguf")
    assert section.model_edit.isVisible()
    assert section.problem() == "Choose the GGUF embedding model, or search files by words only."
    notes = tmp_path / "notes.gguf"
    notes.write_text("not a model")
    section.model_edit.setText(str(notes))
    assert section.problem() == "notes.gguf is not a GGUF file."
    section.model_edit.setText(str(tmp_path / "gone.gguf"))
    assert section.problem().startswith("The embedding model cannot be read: No such file or directory")
    section.model_edit.setText(default_model)
    assert section.problem() == ""
    section.collect(settings)
    assert (settings.get("documents.embeddings"), settings.get("documents.embedding_model")) == ("gguf", default_model)
    select(section.mode_combo, "chat_model")
    assert section.problem() == "" and not section.model_edit.isVisible()
