"""One benchmark run: load the model into a real EngineLoop, run every case `repeat` times, time the baseline."""

from __future__ import annotations

import argparse
from statistics import median
from typing import Any

from engine.bench.constrained import run_constrained, schema_lengths
from engine.bench.harness import Bench
from engine.bench.report import best, memory_figures
from engine.bench.speculative import run_speculative
from engine.bench.workloads import run_kv_reuse, run_queue, run_tabs, story_request
from engine.protocol import CloseChat, ModelConfig, ModelInfo


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Every figure under the JSON keys `--json` writes; raises BenchError when the engine fails."""
    threads = _threads(args)
    config = ModelConfig(path=args.model, backend=args.backend, threads=args.threads, quantization=args.quant,
                         slots=max(4, *args.tabs), prompt_copy=args.prompt_copy,
                         draft_model=getattr(args, "draft_model", None))
    info, measured, samples = _run_cases(config, args)
    result: dict[str, Any] = _header(info, args, threads)
    if args.constrained:
        cases = [[sample["constrained"][i] for sample in samples] for i in range(len(args.tabs))]
        # the best speeds of the repeats, the worst validity, and each repeat's schema/free pair
        result["constrained"] = [{**best(runs), "valid_fraction": min(r["valid_fraction"] for r in runs),
                                  **_pairs(runs, "schema_tok_s", "free_tok_s", "schema_free")} for runs in cases]
        return result
    result.update({
        "speculative": [_speculative([sample["speculative"][i] for sample in samples]) for i in range(len(args.tabs))],
        "memory": memory_figures(config, measured),
    })
    if args.speculative_only:
        return result
    result.update({
        "runs": [best([sample["runs"][i] for sample in samples]) for i in range(len(args.tabs))],
        "queue": best([sample["queue"] for sample in samples]),
        "kv_reuse": best([sample["kv_reuse"] for sample in samples]),
    })
    result.update(_baselines(config, info, args, threads))
    return result


def _header(info: ModelInfo, args: argparse.Namespace, threads: tuple[int, int]) -> dict[str, Any]:
    return {
        "model": info.name, "path": info.path, "backend": info.backend, "quantization": info.quantization,
        "device": "cuda" if info.device.startswith("cuda") else "cpu", "device_detail": info.device,
        "attention": info.attention, "prompt_reading": info.prompt_reading, "threads": threads[0], "threads_batch": threads[1],
        "max_tokens": args.max_tokens, "repeat": args.repeat, "workload": args.workload,
    }


Sample = dict[str, Any]  # one repeat's figures: runs, queue, kv_reuse, speculative


def _speculative(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Best off and best on, and each repeat's on/off pair (measured seconds apart): on this shared
    VM the best-of figures of one code came out 1.01x to 1.59x, so the median pair is the steadier.
    tok_s_off, tok_s_on, accepted_fraction and draft_ms_share are the repeats' medians."""
    medians = {name: median(case.get(key, 0.0) for case in cases) for name, key in (
        ("tok_s_off", "off_tok_s"), ("tok_s_on", "on_tok_s"), ("accepted_fraction", "accepted_fraction"),
        ("draft_ms_share", "draft_ms_share"))}
    return {**best(cases), **medians, **_pairs(cases, "on_tok_s", "off_tok_s", "on_off")}


def _pairs(cases: list[dict[str, Any]], top: str, bottom: str, name: str) -> dict[str, Any]:
    """Each repeat's top/bottom ratio, sorted, and their median, under `name`_pairs and `name`_median."""
    pairs = sorted(case[top] / case[bottom] for case in cases if case[bottom])
    return {f"{name}_pairs": pairs, f"{name}_median": median(pairs) if pairs else 0.0}


def _run_cases(config: ModelConfig, args: argparse.Namespace) -> tuple[ModelInfo, int, list[Sample]]:
    """What loaded, the RSS it added, and each repeat's figures."""
    import psutil

    process = psutil.Process()
    bench = Bench()
    bench.loop.start()
    try:
        before = process.memory_info().rss
        info = bench.load(config)
        bench.serve([story_request("warm-up", 0, 4)])  # first graph allocations, weights paged in
        bench.loop.send(CloseChat("warm-up"))
        measured = process.memory_info().rss - before
        lengths = [schema_lengths(bench, tabs, args.max_tokens) for tabs in args.tabs] if args.constrained else []
        samples = [_run_once(bench, info, args, repeat, lengths) for repeat in range(args.repeat)]
    finally:
        bench.loop.shutdown()
    return info, measured, samples


def _run_once(bench: Bench, info: ModelInfo, args: argparse.Namespace, repeat: int, lengths: list[list[int]]
              ) -> Sample:
    if args.constrained:
        return {"constrained": [run_constrained(bench, info.backend, tabs, args.max_tokens, tab_lengths, repeat % 2 == 1)
                                for tabs, tab_lengths in zip(args.tabs, lengths)]}
    sample: Sample = {"speculative": [run_speculative(bench, args.workload, tabs, args.max_tokens, repeat % 2 == 1)
                                      for tabs in args.tabs]}
    if not args.speculative_only:
        sample["runs"] = [run_tabs(bench, tabs, args.max_tokens) for tabs in args.tabs]
        sample["queue"] = run_queue(bench, 4, args.max_tokens)
        sample["kv_reuse"] = run_kv_reuse(bench, info.context_length, args.history_pairs)
    return sample


def _threads(args: argparse.Namespace) -> tuple[int, int]:
    """The generation and prompt threads llama.cpp steps take on this machine now: generation has
    every core while other processes leave them idle (params.GenerationThreads), and the baseline
    gets the same."""
    import time

    from engine.runners.llamacpp.params import SAMPLE_SECONDS, GenerationThreads, OtherLoad, default_threads

    if args.threads:
        return args.threads, args.threads
    generation, prompt = default_threads()
    others = OtherLoad()
    time.sleep(SAMPLE_SECONDS)
    return GenerationThreads(generation, prompt, others).pick(), prompt


def _baselines(
    config: ModelConfig, info: ModelInfo, args: argparse.Namespace, threads: tuple[int, int]
) -> dict[str, float]:
    """The backend's own library on the same model, after the engine let go of it."""
    if args.backend == "llamacpp":
        from engine.bench.llamacpp_baseline import highlevel_tokens_per_second

        flash = info.attention.startswith("flash attention on")
        return {"baseline_highlevel_tok_s": highlevel_tokens_per_second(
            info.path, args.max_tokens, args.repeat, threads, flash)}
    # transformers' own generate (one request) and generate_batch (all tabs)
    from engine.bench.hf_baseline import measure_baselines

    conversations = [story_request(f"baseline{i}", i, args.max_tokens).messages for i in range(max(args.tabs))]
    return measure_baselines(config, conversations, args.max_tokens)
