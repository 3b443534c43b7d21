"""`python -m engine.bench` end to end on the default model, kept short: keys and sane numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import bench


def test_bench_writes_every_figure(default_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    argv = ["--tabs", "1", "--max-tokens", "8", "--repeat", "1", "--model", default_model, "--json", str(out)]
    assert bench.main(argv) == 0
    result = json.loads(out.read_text())

    assert result["backend"] == "llamacpp" and result["device"] in ("cpu", "cuda")
    assert result["max_tokens"] == 8 and result["model"]
    assert result["baseline_highlevel_tok_s"] > 0
    [run] = result["runs"]
    assert run["tabs"] == 1 and run["generated_tokens"] == 8
    assert run["aggregate_tok_s"] > 0 and 0 < run["ttft_ms_p50"] <= run["ttft_ms_p99"]
    assert result["queue"]["tabs"] == 4 and result["queue"]["ttft_ms_p99"] > 0
    reuse = result["kv_reuse"]
    assert 1500 < reuse["history_tokens"] < 2500
    assert reuse["cold_ttft_ms"] > 0 and reuse["warm_ttft_ms"] > 0
    assert reuse["warm_reused_tokens"] >= reuse["history_tokens"]  # the whole first turn came from the cache
    [speculative] = result["speculative"]
    assert speculative["tabs"] == 1 and speculative["workload"] == "chat" == result["workload"]
    assert speculative["off_tok_s"] > 0 and speculative["on_tok_s"] > 0 and 0 <= speculative["acceptance"] <= 1
    if "memory" in result:
        assert result["memory"]["measured_bytes"] > 0
        assert result["memory"].get("estimated_bytes", 1) > 0

    printed = capsys.readouterr().out
    assert "tok/s" in printed and "kv reuse" in printed and "baseline" in printed and "speculative" in printed


def test_the_edit_workload_alone_measures_drafts_off_and_on(default_model: str, tmp_path: Path) -> None:
    out = tmp_path / "edit.json"
    argv = ["--workload", "edit", "--speculative-only", "--tabs", "1", "--max-tokens", "24", "--repeat", "1",
            "--model", default_model, "--threads", "1", "--json", str(out)]
    assert bench.main(argv) == 0
    result = json.loads(out.read_text())
    assert "runs" not in result and "baseline_highlevel_tok_s" not in result
    [edit] = result["speculative"]
    assert (edit["tabs"], edit["workload"]) == (1, "edit") and edit["off_tok_s"] > 0 and edit["on_tok_s"] > 0
    assert edit["acceptance"] > 0.5 and edit["drafted_tokens"] > 0, "the model copies the passage: drafts hold"
    assert edit["on_off_pairs"] == [edit["on_off_median"]] == [edit["on_tok_s"] / edit["off_tok_s"]]


def test_the_speculative_figures_keep_each_repeats_pair_and_their_median() -> None:
    from engine.bench.measure import _speculative

    case = {"tabs": 1, "workload": "edit", "acceptance": 0.5, "drafted_tokens": 5}
    merged = _speculative([{**case, "off_tok_s": 10.0, "on_tok_s": 20.0}, {**case, "off_tok_s": 20.0, "on_tok_s": 22.0},
                           {**case, "off_tok_s": 15.0, "on_tok_s": 30.0}])
    assert (merged["off_tok_s"], merged["on_tok_s"]) == (20.0, 30.0)  # the best of each, as before
    assert merged["on_off_pairs"] == [1.1, 2.0, 2.0] and merged["on_off_median"] == 2.0


def test_bench_refuses_nonsense_tab_counts(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.parse(["--tabs", "one,four"])
    assert "--tabs wants numbers" in capsys.readouterr().err


def test_percentiles_interpolate() -> None:
    assert bench.percentile([10.0, 20.0, 30.0, 40.0], 0.5) == 25.0
    assert bench.percentile([10.0, 20.0, 30.0, 40.0], 0.99) == pytest.approx(39.7)
    assert bench.percentile([5.0], 0.99) == 5.0


@pytest.mark.slow
def test_hf_bench_reports_generate_and_generate_batch_baselines(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from tests.engine.runners.hf.tiny_hf import build_tiny_llama

    folder = build_tiny_llama(tmp_path / "tiny")
    out = tmp_path / "hf.json"
    argv = ["--backend", "hf", "--model", str(folder), "--tabs", "1,2", "--max-tokens", "6", "--repeat", "1",
            "--threads", "1", "--json", str(out)]
    assert bench.main(argv) == 0
    result = json.loads(out.read_text())
    assert result["backend"] == "hf" and "baseline_highlevel_tok_s" not in result
    assert result["baseline_generate_tok_s"] > 0 and result["baseline_generate_batch_tok_s"] > 0
    assert [run["tabs"] for run in result["runs"]] == [1, 2]
    assert [run["generated_tokens"] for run in result["runs"]] == [6, 12]


def test_the_bench_stops_when_the_engine_thread_has_ended() -> None:
    """An engine that died sends EngineError and nothing more: the run says so instead of waiting 15 minutes."""
    from engine.bench.harness import Bench, BenchError
    from engine.protocol import ChatMessage, EngineError, SamplingParams, Submit

    waiting = Bench()  # its engine thread never starts
    waiting.events.put((0.0, EngineError("The engine stopped: the runner broke")))
    with pytest.raises(BenchError, match="the runner broke"):
        waiting.serve([Submit("a", (ChatMessage("user", "Hi"),), SamplingParams())])


def test_repeats_alternate_which_half_of_the_speculative_case_runs_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second half ran 1.08-1.15x faster with no draft at all, so neither half may always go second."""
    from types import SimpleNamespace

    import engine.bench.speculative as speculative

    order: list[str] = []

    def timed(_bench: object, requests: list) -> tuple[float, list]:
        order.append(requests[0].sampling.speculative)
        stats = SimpleNamespace(generated_tokens=10, drafted_tokens=4, accepted_tokens=2)
        return 1.0, [SimpleNamespace(finished=SimpleNamespace(stats=stats)) for _ in requests]

    monkeypatch.setattr(speculative, "_decode", timed)
    first = speculative.run_speculative(None, "chat", 2, 8)  # type: ignore[arg-type]
    second = speculative.run_speculative(None, "chat", 2, 8, on_first=True)  # type: ignore[arg-type]
    assert order == ["off", "auto", "auto", "off"]
    assert first["off_tok_s"] == second["off_tok_s"] == first["on_tok_s"] == 20.0 and second["acceptance"] == 0.5


def test_documents_mode_writes_its_figures(default_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "documents.json"
    argv = ["--documents", "--pages", "30", "--repeat", "1", "--model", default_model, "--json", str(out)]
    assert bench.main(argv) == 0
    figures = json.loads(out.read_text())["documents"]
    assert {"pages", "index_pages_per_s", "retrieval_ms_p50", "retrieval_ms_p99", "ttft_ms_with",
            "ttft_ms_without"} <= set(figures)
    assert figures["pages"] == 30 and figures["index_pages_per_s"] > 0
    assert 0 < figures["retrieval_ms_p50"] <= figures["retrieval_ms_p99"]
    assert 0 < figures["fused_retrieval_ms_p50"] <= figures["fused_retrieval_ms_p99"]
    assert figures["ttft_ms_with"] > 0 and figures["ttft_ms_without"] > 0 and figures["citations"] >= 1
    assert "pages/s" in capsys.readouterr().out
