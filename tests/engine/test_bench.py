"""`python -m engine.bench` end to end, every mode on a tiny case (the default model or the tiny transformers
model, a few tokens, one repeat): the JSON's keys and sane numbers, and the table's lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from engine import bench

TINY = ["--tabs", "1", "--repeat", "1"]


def run_bench(argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    """main() as the command line runs it: exit code 0, the JSON it wrote, the table it printed."""
    assert bench.main([*argv, "--json", str(out)]) == 0, capsys.readouterr().err
    return json.loads(out.read_text()), capsys.readouterr().out


def test_bench_writes_every_figure(default_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    argv = ["--tabs", "1", "--max-tokens", "8", "--repeat", "1", "--model", default_model, "--json", str(out),
            "--history-pairs", "2"]  # a third of the long history: the figures, not their size, are tested
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
    assert 500 < reuse["history_tokens"] < 800  # 2 of the 6 pairs of about 2,000 tokens
    assert reuse["cold_ttft_ms"] > 0 and reuse["warm_ttft_ms"] > 0
    assert reuse["warm_reused_tokens"] >= reuse["history_tokens"]  # the whole first turn came from the cache
    [speculative] = result["speculative"]
    assert speculative["tabs"] == 1 and speculative["workload"] == "chat" == result["workload"]
    assert speculative["off_tok_s"] > 0 and speculative["on_tok_s"] > 0 and 0 <= speculative["acceptance"] <= 1
    memory = result["memory"]
    assert memory["measured_bytes"] > 0 and memory["estimated_bytes"] > memory["estimated_after_load_bytes"] > 0

    printed = capsys.readouterr().out
    assert "tok/s" in printed and "kv reuse" in printed and "baseline" in printed and "speculative" in printed
    assert "baseline, llama-cpp-python high-level:" in printed and "speculative decoding, chat workload:" in printed
    assert result["prompt_reading"].startswith("F32 copy")  # --prompt-copy auto, the bundled model
    assert f"long prompts: {result['prompt_reading']}" in printed and "MiB with every chat full; measured" in printed


def test_the_edit_workload_alone_measures_drafts_off_and_on_with_the_prompt_copy_off(
    default_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--workload edit, --speculative-only and --prompt-copy in one short run (the default run above reads
    long prompts with the copy, "auto" on the bundled model)."""
    argv = ["--workload", "edit", "--speculative-only", "--prompt-copy", "off", *TINY, "--max-tokens", "24",
            "--model", default_model, "--threads", "1"]
    result, printed = run_bench(argv, tmp_path / "edit.json", capsys)
    assert "runs" not in result and "baseline_highlevel_tok_s" not in result
    [edit] = result["speculative"]
    assert (edit["tabs"], edit["workload"]) == (1, "edit") and edit["off_tok_s"] > 0 and edit["on_tok_s"] > 0
    assert edit["drafted_tokens"] > 0 and 0 <= edit["acceptance"] <= 1
    assert edit["on_off_pairs"] == [edit["on_off_median"]] == [edit["on_tok_s"] / edit["off_tok_s"]]
    assert "speculative decoding, edit workload:" in printed and "kv reuse" not in printed
    assert f"{edit['off_tok_s']:10.1f} {edit['on_tok_s']:9.1f}" in printed
    assert not result["prompt_reading"].startswith("F32 copy") and "long prompts: F32 copy" not in printed


def test_the_speculative_figures_keep_each_repeats_pair_and_their_median() -> None:
    from engine.bench.measure import _speculative

    case = {"tabs": 1, "workload": "edit", "acceptance": 0.5, "drafted_tokens": 5}
    merged = _speculative([{**case, "off_tok_s": 10.0, "on_tok_s": 20.0}, {**case, "off_tok_s": 20.0, "on_tok_s": 22.0},
                           {**case, "off_tok_s": 15.0, "on_tok_s": 30.0}])
    assert (merged["off_tok_s"], merged["on_tok_s"]) == (20.0, 30.0)  # the best of each, as before
    assert merged["on_off_pairs"] == [1.1, 2.0, 2.0] and merged["on_off_median"] == 2.0


def test_the_table_of_a_remote_run_has_no_draft_lines() -> None:
    """A remote server's drafts are its own: its result has no speculative case (this raised KeyError: 'workload')."""
    from engine.bench.report import table

    result = {"model": "m", "quantization": "(the server's)", "device_detail": "remote: http://127.0.0.1:1",
              "attention": "(the server's)", "threads": 0, "threads_batch": 0, "max_tokens": 4, "repeat": 1,
              "runs": [{"tabs": 1, "aggregate_tok_s": 10.0, "ttft_ms_p50": 5.0, "ttft_ms_p99": 6.0}],
              "queue": {"tabs": 4, "ttft_ms_p99": 7.0}, "baseline_sdk_tok_s": 9.5,
              "kv_reuse": {"history_tokens": 100, "cold_ttft_ms": 8.0, "warm_ttft_ms": 2.0, "warm_reused_tokens": 90}}
    printed = table(result)
    assert "baseline, openai client, 1 stream:      9.5 tok/s" in printed and "    1     10.0" in printed
    assert "speculative" not in printed and "long prompts" not in printed


def test_bench_refuses_nonsense_tab_counts(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.parse(["--tabs", "one,four"])
    assert "--tabs wants numbers" in capsys.readouterr().err


def test_percentiles_interpolate() -> None:
    assert bench.percentile([10.0, 20.0, 30.0, 40.0], 0.5) == 25.0
    assert bench.percentile([10.0, 20.0, 30.0, 40.0], 0.99) == pytest.approx(39.7)
    assert bench.percentile([5.0], 0.99) == 5.0


def test_hf_bench_reports_generate_and_generate_batch_baselines(
    tiny_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--backend", "hf", "--model", tiny_model, "--tabs", "1,2", "--max-tokens", "6", "--repeat", "1",
            "--threads", "1"]
    result, printed = run_bench(argv, tmp_path / "hf.json", capsys)
    assert result["backend"] == "hf" and "baseline_highlevel_tok_s" not in result
    assert result["baseline_generate_tok_s"] > 0 and result["baseline_generate_batch_tok_s"] > 0
    assert [run["tabs"] for run in result["runs"]] == [1, 2]
    assert [run["generated_tokens"] for run in result["runs"]] == [6, 12]
    assert [case["tabs"] for case in result["speculative"]] == [1, 2]
    assert "baseline, transformers generate:" in printed and "baseline, transformers generate_batch:" in printed
    assert "speculative decoding, chat workload:" in printed and "kv reuse" in printed


@pytest.fixture(scope="module")
def api_server(default_model: str) -> Iterator[str]:
    """hearth-serve's server in this process, on the default model: the remote bench's other end."""
    from engine.clients import EngineHost
    from engine.protocol import ModelConfig
    from engine.server import ApiServer, ServerOptions
    from tests.engine.server.conftest import load

    host = EngineHost()
    host.start()
    # the bench takes a server that does not say its context for a 4,096-token one: the kv reuse case
    # sends its long history (~650 tokens at the tests' --history-pairs 2, ~1,900 at the default)
    load(host, ModelConfig(path=default_model, context_length=2048, slots=4, threads=1))
    server = ApiServer(host, ServerOptions(port=0, max_waiting=8))
    server.start()
    yield server.url
    server.stop()
    host.shutdown()


def test_the_remote_bench_measures_a_server_and_prints_its_table(
    api_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--backend remote once crashed after its run: its result has no drafts of its own to print."""
    result, printed = run_bench(["--backend", "remote", "--url", api_server, *TINY, "--max-tokens", "4",
                                 "--history-pairs", "2"],
                                tmp_path / "remote.json", capsys)
    assert (result["backend"], result["device"]) == ("remote", "remote") and "speculative" not in result
    [run] = result["runs"]
    assert run["tabs"] == 1 and run["generated_tokens"] == 4 and run["aggregate_tok_s"] > 0
    # timed from here; the prompt's tokens and the cache are the server's own (a remote turn starts with 0 known)
    assert result["queue"]["tabs"] == 4 and result["kv_reuse"]["cold_ttft_ms"] > 0 < result["kv_reuse"]["warm_ttft_ms"]
    assert set(result["kv_reuse"]) == {"history_tokens", "cold_ttft_ms", "warm_ttft_ms", "warm_prompt_tokens",
                                       "warm_reused_tokens"}
    assert result["baseline_sdk_tok_s"] > 0 and "baseline_sdk_concurrent_tok_s" not in result  # 4 tabs were not asked
    assert "baseline, openai client, 1 stream:" in printed and "kv reuse" in printed
    assert "speculative" not in printed and printed.startswith(f"{result['model']} ((the server's), ")


def test_the_api_bench_measures_both_servers(default_model: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    result, printed = run_bench(["--api", "--model", default_model, *TINY, "--max-tokens", "4", "--threads", "1"],
                                tmp_path / "api.json", capsys)
    api = result["api"]
    assert api["in_process_tab_tok_s"] > 0 and set(result["api_ttft_ms"]) == {"hearth", "peer_llama_cpp_server"}
    for key in ("hearth", "peer_llama_cpp_server"):
        [run] = api[key]
        assert run["clients"] == 1 and run["aggregate_tok_s"] > 0 and 0 < run["ttft_ms_p50"] <= run["ttft_ms_p99"]
    assert "in-process tab:" in printed and "hearth-serve" in printed and "llama_cpp.server" in printed


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
        stats = SimpleNamespace(generated_tokens=10, drafted_tokens=4, accepted_tokens=2,
                                drafts_by_source=(("lookup", 3, 2), ("pool", 1, 0)))
        return 1.0, [SimpleNamespace(finished=SimpleNamespace(stats=stats)) for _ in requests]

    monkeypatch.setattr(speculative, "decode_timed", timed)
    no_draft_model = SimpleNamespace(loop=SimpleNamespace(pool=SimpleNamespace(last=lambda: None)))
    first = speculative.run_speculative(no_draft_model, "chat", 2, 8)  # type: ignore[arg-type]
    second = speculative.run_speculative(no_draft_model, "chat", 2, 8, on_first=True)  # type: ignore[arg-type]
    assert order == ["off", "auto", "auto", "off"]
    assert first["off_tok_s"] == second["off_tok_s"] == first["on_tok_s"] == 20.0 and second["acceptance"] == 0.5
    assert (first["source"], first["accepted_fraction"], first["draft_ms_share"]) == ("prompt lookup and pool", 0.5, 0.0)


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
    assert figures["chunks"] >= 30 and figures["vectors_pages_per_s"] > 0
    assert figures["embedding_model"] == "hashed bag of words (stand-in)"
    assert "pages/s" in capsys.readouterr().out


def test_documents_mode_with_a_gguf_embedding_model(default_model: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "documents.json"
    argv = ["--documents", "--pages", "3", "--repeat", "1", "--model", default_model, "--threads", "1",
            "--embedding-model", default_model, "--json", str(out)]
    assert bench.main(argv) == 0
    figures = json.loads(out.read_text())["documents"]
    assert figures["embedding_model"] == default_model and figures["chunks"] >= 3
    assert 0 < figures["fused_retrieval_ms_p50"] <= figures["fused_retrieval_ms_p99"]
    assert f"vectors ({default_model}): {figures['chunks']} chunks at" in capsys.readouterr().out


def test_two_models_alone_and_together_the_load_on_demand_and_the_interleaving(
        default_model: str, requantized_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--models", f"{default_model},{requantized_model}", *TINY, "--max-tokens", "12", "--threads", "1",
            "--history-pairs", "2"]
    result, printed = run_bench(argv, tmp_path / "models.json", capsys)
    assert result["models"] == [Path(default_model).stem, Path(requantized_model).stem] and result["tabs"] == 1
    assert [run["generated_tokens"] for run in result["alone"]] == [12, 12] and result["both"]["generated_tokens"] == 24
    speeds = [run["aggregate_tok_s"] for run in result["alone"]]
    assert result["harmonic_alone_tok_s"] == pytest.approx(2 / (1 / speeds[0] + 1 / speeds[1]))
    assert result["aggregate_ratio"] == pytest.approx(result["both"]["aggregate_tok_s"] / result["harmonic_alone_tok_s"])
    assert result["load_on_demand_ms"] > 0 and result["both"]["ttft_ms_p99"] > 0
    gaps = result["interleave"]
    assert gaps["long_prompt_ms"] > 0 and gaps["gap_ms_median_alone"] > 0
    assert gaps["tokens_during_long_prompt"] >= 0 and gaps["gap_ms_max_during_long_prompt"] >= 0
    assert "both at once" in printed and "load on demand:" in printed and "interleave:" in printed
