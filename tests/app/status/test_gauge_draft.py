"""The gauge with a draft model loaded beside the model: its weights and cache as a part of the memory bar, and
its drafts as a source of their own in the details."""

from __future__ import annotations

import dataclasses

from app.status.gauge import GaugeWidget
from tests.app.scripted_bridge import model_info
from tests.app.status.test_gauge import MIB, stats


def test_the_draft_model_has_its_part_of_the_bar_and_its_line_in_the_details(qtbot, monkeypatch) -> None:
    # an embedding model or a voice model another test of this worker left loaded would take its part of "other"
    monkeypatch.setattr("app.status.gauge_figures.embedding_models", lambda: [])
    monkeypatch.setattr("app.status.gauge_figures.voice_models", lambda: [])
    gauge = GaugeWidget(lambda _chat_id: "")
    qtbot.addWidget(gauge)
    gauge.set_model(dataclasses.replace(model_info(), draft_model="SmolLM2-135M-Instruct.Q4_0.gguf",
                                        draft_model_bytes=50 * MIB))
    gauge.update_stats(stats(model_bytes=MIB, kv_cache_bytes=MIB, drafted_tokens=60, accepted_tokens=42,
                             drafts_by_source=(("draft", 40, 30), ("lookup", 20, 12))))
    parts = {part.name: part.size for part in gauge.memory_bar.parts}
    assert gauge.memory is not None
    assert parts["draft model SmolLM2-135M-Instruct.Q4_0.gguf"] == 50 * MIB  # this process holds far more than 52 MiB
    assert parts["other"] == gauge.memory.process_bytes - 52 * MIB
    details = gauge.details_html()
    assert "draft model: 75% of 40 drafted tokens accepted" in details
    assert "prompt lookup: 60% of 20 drafted tokens accepted" in details
