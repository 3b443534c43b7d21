"""The gauge's estimate rows: what the model was estimated at right after load and with every chat full."""

from __future__ import annotations

from app.status.gauge import GaugeWidget
from app.status.models_rows import model_rows
from engine.protocol import EngineStats, ModelStats
from tests.app.scripted_bridge import model_info

MIB = 1 << 20


def test_the_details_give_both_estimated_figures(qtbot) -> None:
    gauge = GaugeWidget(lambda _chat_id: "")
    qtbot.addWidget(gauge)
    gauge.set_model(model_info(estimated_after_load_bytes=1624 * MIB, estimated_full_bytes=1946 * MIB))
    assert ("<b>Estimated</b>&nbsp;&nbsp;</td><td>1.6 GiB after load, up to 1.9 GiB with every chat full"
            in gauge.details_html())
    gauge.set_model(model_info(estimated_after_load_bytes=600 * MIB, estimated_full_bytes=600 * MIB))
    assert "<td>600 MiB with every chat full</td>" in gauge.details_html()
    gauge.set_model(model_info())  # no estimate (a remote server, an unreadable file): no row
    assert "Estimated" not in gauge.details_html()


def test_each_loaded_models_block_gives_its_estimate() -> None:
    infos = {path: model_info(path, estimated_after_load_bytes=after * MIB, estimated_full_bytes=full * MIB)
             for path, after, full in (("/m/a.gguf", 300, 400), ("/m/b.gguf", 0, 0))}
    models = tuple(ModelStats(path, path, 0.0, 0, 4, 100 * MIB, 200 * MIB) for path in infos)
    stats = EngineStats(0.0, (), 0, 8, 400 * MIB, 200 * MIB, 0, models=models)
    rows = model_rows(stats, infos, lambda chat: chat)
    assert ("&nbsp;&nbsp;Estimated", "300 MiB after load, up to 400 MiB with every chat full") in rows
    assert sum(1 for name, _ in rows if name == "&nbsp;&nbsp;Estimated") == 1


def test_the_documents_embedding_model_has_its_row_and_its_part_of_the_bar(qtbot, default_model: str) -> None:
    from engine.documents import embedder

    embedder.close_embedders()  # the process's shared embedders: an earlier test file may have left one loaded
    gauge = GaugeWidget(lambda _chat_id: "")
    qtbot.addWidget(gauge)
    gauge.set_model(model_info())
    assert "embedding model" not in gauge.details_html()
    loaded = embedder.shared_embedder(default_model)  # as the document worker loads it
    try:
        expected = embedder.embedder_bytes(default_model)
        assert loaded.memory_bytes == expected > 92 * MIB  # its weights and one context of 512 positions
        gauge.update_stats(EngineStats(0.0, (), 0, 4, MIB, MIB, 0))  # the rest: this process
        size = f"{expected / MIB:.0f} MiB"
        assert (f"<b>Documents</b>&nbsp;&nbsp;</td><td>embedding model SmolLM2-135M-Instruct.Q4_1.gguf: {size} in RAM "
                "(estimated)") in gauge.details_html()
        parts = {part.name: part.size for part in gauge.memory_bar.parts}
        assert parts["embedding model"] == min(expected, gauge.memory.process_bytes - 2 * MIB) > 0
    finally:
        embedder.close_embedders()
    gauge.update_stats(EngineStats(0.0, (), 0, 4, MIB, MIB, 0))  # the rest: this process
    assert "embedding model" not in gauge.details_html()
