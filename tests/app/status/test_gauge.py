"""The gauge from a ModelInfo and engine stats alone: memory parts, speed, slots and the model's details."""

from __future__ import annotations

from app.status.gauge import GaugeWidget
from engine.protocol import EngineStats
from tests.app.scripted_bridge import model_info

MIB = 1 << 20


def stats(**changes: object) -> EngineStats:
    values: dict[str, object] = dict(tokens_per_second=12.5, chat_tokens_per_second=(("a", 12.5),), slots_busy=1,
                                     slots_total=4, kv_cache_bytes=360 * MIB, model_bytes=92 * MIB,
                                     total_generated_tokens=40)
    values.update(changes)
    return EngineStats(**values)  # type: ignore[arg-type]


def test_the_bar_shows_model_kv_and_the_rest_of_this_process(qtbot, monkeypatch) -> None:
    # an embedding model or a voice model another test of this worker left loaded would take its part of the rest
    monkeypatch.setattr("app.status.gauge_figures.embedding_models", lambda: [])
    monkeypatch.setattr("app.status.gauge_figures.voice_models", lambda: [])
    gauge = GaugeWidget(lambda chat_id: {"a": "Recipes"}.get(chat_id, "closed chat"))
    qtbot.addWidget(gauge)
    gauge.set_model(model_info())
    gauge.update_stats(stats())
    parts = gauge.memory_bar.parts
    assert [(part.name, part.size) for part in parts[:2]] == [("model", 92 * MIB), ("KV cache", 360 * MIB)]
    assert gauge.memory is not None
    assert gauge.memory_bar.scale == gauge.memory.process_bytes  # RAM: this process's share is the whole bar
    assert parts[2].size == max(gauge.memory.process_bytes - 452 * MIB, 0)
    assert gauge.speed_label.text() == "12.5 tok/s" and gauge.slots_label.text() == "slots 1/4"
    details = gauge.details_html()
    assert "Recipes" in details and "4096 tokens per chat" in details and "Chat template" not in details


def test_the_details_say_when_the_model_has_no_chat_template(qtbot) -> None:
    gauge = GaugeWidget(lambda _chat_id: "")
    qtbot.addWidget(gauge)
    gauge.set_model(model_info(has_chat_template=False))
    details = gauge.details_html()
    assert "<b>Chat template</b>" in details and "likely a base model, which continues text" in details
    gauge.set_model(None)
    assert gauge.details_html() == "No model is loaded."


def test_the_details_say_how_decode_steps_run_where_the_backend_says(qtbot) -> None:
    gauge = GaugeWidget(lambda _chat_id: "")
    qtbot.addWidget(gauge)
    gauge.set_model(model_info())
    assert "Decode" not in gauge.details_html()  # llama.cpp leaves it empty
    gauge.set_model(model_info(decode="CUDA graphs, batches of 1/2/4 (5.1x the eager step at load)"))
    assert "<b>Decode</b>&nbsp;&nbsp;</td><td>CUDA graphs, batches of 1/2/4 (5.1x" in gauge.details_html()


def test_the_gauge_names_the_model_by_its_file_and_the_details_keep_the_files_own_name(qtbot) -> None:
    gauge = GaugeWidget(lambda _chat_id: "")
    qtbot.addWidget(gauge)
    gauge.set_model(model_info(name="SmolLM2-135M-Instruct.Q4_1", metadata_name="Smollm2 135M 8k Lc100K Mix1 Ep2"))
    assert gauge.model_label.text().startswith("SmolLM2-135M-Inst")  # shortened to fit the status bar
    assert "<b>Model</b>&nbsp;&nbsp;</td><td>SmolLM2-135M-Instruct.Q4_1 · " in gauge.details_html()
    assert "<b>Name in the file</b>&nbsp;&nbsp;</td><td>Smollm2 135M 8k Lc100K Mix1 Ep2" in gauge.details_html()
    gauge.set_model(model_info(name="tiny", metadata_name="tiny"))
    assert "Name in the file" not in gauge.details_html()  # said once is enough


def test_in_a_narrow_window_the_model_part_gives_way_with_an_ellipsis(qtbot) -> None:
    from PySide6.QtWidgets import QMainWindow

    window = QMainWindow()
    qtbot.addWidget(window)
    gauge = GaugeWidget(lambda _chat_id: "")
    window.statusBar().addPermanentWidget(gauge)
    gauge.set_model(model_info())
    full = gauge.model_label.text()
    window.resize(1600, 300)
    window.show()
    qtbot.waitUntil(lambda: gauge.model_label.shown_text() == full)
    window.resize(700, 300)
    qtbot.waitUntil(lambda: gauge.model_label.shown_text() != full)
    shown = gauge.model_label.shown_text()
    assert shown.endswith("…") and full.startswith(shown[:-1]) and len(shown) >= 8
    right_edge = gauge.model_label.mapTo(window, gauge.model_label.rect().topRight()).x()
    assert right_edge <= window.width(), "the label ends inside the window, not cut at its edge"


def test_the_gauge_shows_how_many_drafted_tokens_were_accepted_only_while_there_are_drafts(qtbot) -> None:
    gauge = GaugeWidget(lambda _chat_id: "")
    qtbot.addWidget(gauge)
    gauge.show()
    gauge.set_model(model_info())
    gauge.update_stats(stats(drafted_tokens=80, accepted_tokens=58))
    assert gauge.draft_label.isVisible() and gauge.draft_label.text() == "drafts 72%"
    assert "72% of 80 drafted tokens accepted" in gauge.details_html()
    gauge.update_stats(stats())
    assert not gauge.draft_label.isVisible() and "no drafts in the last few seconds" in gauge.details_html()


def test_the_details_split_the_drafts_by_source(qtbot) -> None:
    gauge = GaugeWidget(lambda _chat_id: "")
    qtbot.addWidget(gauge)
    gauge.show()
    gauge.set_model(model_info())
    gauge.update_stats(stats(drafted_tokens=80, accepted_tokens=58,
                             drafts_by_source=(("lookup", 60, 48), ("pool", 20, 10))))
    assert gauge.draft_label.text() == "drafts 72%"
    details = gauge.details_html()
    assert "prompt lookup: 80% of 60 drafted tokens accepted" in details
    assert "shared n-gram pool: 50% of 20 drafted tokens accepted" in details
    gauge.show_details()
    popup = gauge._popup
    assert popup is not None and "shared n-gram pool" in popup.text()
