"""Settings' memory estimate counts the documents' GGUF embedding model when Settings > Documents names one."""

from __future__ import annotations

from app.settings.store import Settings
from engine.documents.embedder import embedder_bytes
from tests.app.settings.test_dialog import capabilities, make_dialog, settings  # noqa: F401 - fixtures
from engine.units import format_bytes


def test_the_estimate_and_its_bar_count_the_embedding_model(make_dialog, settings: Settings,  # noqa: F811
                                                            default_model: str) -> None:
    dialog = make_dialog(settings)
    plain = dialog.current_estimate()
    assert plain is not None and plain.embedding_bytes == 0
    assert "embedding model" not in dialog.memory.breakdown_label.text()
    dialog.documents.model_edit.setText(default_model)
    dialog.documents.model_edit.editingFinished.emit()
    dialog.documents.mode_combo.setCurrentIndex(dialog.documents.mode_combo.findData("gguf"))
    counted = dialog.current_estimate()
    assert counted is not None and counted.embedding_bytes == embedder_bytes(default_model) > 0
    assert counted.total_bytes == plain.total_bytes + counted.embedding_bytes
    text = dialog.memory.breakdown_label.text()  # shown at once: the dialog follows the Documents page
    assert f"embedding model {format_bytes(counted.embedding_bytes)}" in text
    assert f"= {format_bytes(counted.total_bytes)};" in text
    assert f"Needs about {format_bytes(counted.device_after_load_bytes)} once loaded" in dialog.memory.verdict_label.text()
