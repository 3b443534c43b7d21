"""`--models A,B`: several models in one engine against each alone, and how their steps interleave.

Each model alone with `--tabs` tabs (one engine, only that model loaded), then both loaded with `--tabs`
tabs each, all at once: aggregate tokens/s and p99 time to first token. The goal: both together reach
0.9x the harmonic mean of each alone (what sharing the cores perfectly would give) with a p99 TTFT at
most 1.5x alone's. Then the time to load on demand (a request naming a model that is not loaded: load,
prompt, first token), and the interleaving: the gaps between one model's tokens while the other reads a
~2,000-token prompt, against its gaps alone.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path
from statistics import median
from typing import Any

from engine.bench.harness import Bench, BenchError
from engine.bench.report import best, percentile
from engine.bench.workloads import history, story_request
from engine.catalog.model_files import known_name
from engine.protocol import (
    ChatMessage, CloseChat, LoadModel, ModelConfig, ModelLoadFailed, SamplingParams, Submit, Token,
    TurnFinished, UnloadModel,
)


def measure_models(args: argparse.Namespace) -> dict[str, Any]:
    paths, tabs = args.models, args.tabs[0]
    configs = [ModelConfig(path=path, threads=args.threads, slots=max(4, tabs), prompt_copy=args.prompt_copy)
               for path in paths]
    bench = Bench()
    bench.loop.start()
    try:
        alone = []
        for config in configs:
            bench.load(config)
            _warm(bench, config.path)
            alone.append(best([_run(bench, [config.path], tabs, args.max_tokens) for _ in range(args.repeat)]))
            _unload(bench, config.path)
        for config in configs:
            bench.load(config)
            _warm(bench, config.path)
        both = best([_run(bench, paths, tabs, args.max_tokens) for _ in range(args.repeat)])
        interleave = _interleave(bench, paths, args.max_tokens, args.history_pairs)
        _unload(bench, paths[-1])
        load_ms = _load_on_demand(bench, configs[-1])
    finally:
        bench.loop.shutdown()
    harmonic = len(alone) / sum(1 / run["aggregate_tok_s"] for run in alone)
    alone_p99 = max(run["ttft_ms_p99"] for run in alone)
    return {"models": [known_name(path) for path in paths], "paths": paths, "tabs": tabs,
            "max_tokens": args.max_tokens, "repeat": args.repeat, "threads": args.threads or 0,
            "alone": alone, "both": both, "harmonic_alone_tok_s": harmonic,
            "aggregate_ratio": both["aggregate_tok_s"] / harmonic,
            "ttft_ratio": both["ttft_ms_p99"] / alone_p99 if alone_p99 else 0.0,
            "load_on_demand_ms": load_ms, "interleave": interleave}


def _submit(path: str, chat_id: str, tab: int, max_tokens: int) -> Submit:
    return replace(story_request(chat_id, tab, max_tokens), model=path)


def _warm(bench: Bench, path: str) -> None:
    bench.serve([_submit(path, "warm-up", 0, 4)])
    bench.loop.send(CloseChat("warm-up"))


def _run(bench: Bench, paths: list[str], tabs: int, max_tokens: int) -> dict[str, Any]:
    submits = [_submit(path, f"m{m}-tab{i}", i, max_tokens) for m, path in enumerate(paths) for i in range(tabs)]
    started = time.perf_counter()
    turns = bench.serve(submits)
    elapsed = time.perf_counter() - started
    generated = sum(t.finished.stats.generated_tokens for t in turns if t.finished)
    ttfts = [t.ttft_s * 1000 for t in turns]
    for turn in turns:
        bench.loop.send(CloseChat(turn.chat_id))
    return {"models": len(paths), "tabs": tabs, "aggregate_tok_s": generated / elapsed,
            "ttft_ms_p50": percentile(ttfts, 0.5), "ttft_ms_p99": percentile(ttfts, 0.99),
            "generated_tokens": generated}


def _unload(bench: Bench, path: str) -> None:
    bench.loop.send(UnloadModel(path))
    _wait_for(bench, lambda event: type(event).__name__ == "ModelUnloaded" and event.path == path)  # type: ignore[attr-defined]


def _wait_for(bench: Bench, found: Any) -> float:
    while True:
        at, event = bench.next_event()
        if found(event):
            return at
        if isinstance(event, ModelLoadFailed):
            raise BenchError(event.message)


def _load_on_demand(bench: Bench, config: ModelConfig) -> float:
    """A turn for a model that is not loaded: from the request to its first token (the load included)."""
    started = time.perf_counter()
    bench.loop.send(LoadModel(config))
    bench.loop.send(_submit(config.path, "on-demand", 0, 8))  # waits in the engine for the load
    first = _wait_for(bench, lambda event: isinstance(event, Token) and event.chat_id == "on-demand")
    _wait_for(bench, lambda event: isinstance(event, TurnFinished) and event.chat_id == "on-demand")
    bench.loop.send(CloseChat("on-demand"))
    return (first - started) * 1000


def _interleave(bench: Bench, paths: list[str], max_tokens: int, pairs: int) -> dict[str, Any]:
    """The second model streams one tab; the first gets a long prompt: the second's token gaps meanwhile."""
    streaming, reading = paths[-1], paths[0]
    alone = _token_times(bench, [_submit(streaming, "gaps-alone", 0, max_tokens)], "gaps-alone")
    long_prompt = (*history(pairs), ChatMessage("user", "What did the keeper find on day 3?"))
    params = SamplingParams(temperature=0, repeat_penalty=1.0, max_new_tokens=4)
    reader = Submit("long-prompt", long_prompt, params, model=reading)
    together = _token_times(bench, [_submit(streaming, "gaps-beside", 1, max_tokens), reader], "gaps-beside",
                            "long-prompt")
    gaps_alone = _gaps(alone["gaps-alone"])
    beside = together["gaps-beside"]
    read_from, read_to = together["long-prompt-submitted"][0], together["long-prompt"][0]
    during = [b - a for a, b in zip(beside, beside[1:]) if b > read_from and a < read_to]
    for chat in ("gaps-alone", "gaps-beside", "long-prompt"):
        bench.loop.send(CloseChat(chat))
    return {"streaming_model": known_name(streaming), "reading_model": known_name(reading),
            "long_prompt_ms": (read_to - read_from) * 1000,
            "gap_ms_median_alone": median(gaps_alone) * 1000 if gaps_alone else 0.0,
            "gap_ms_max_alone": max(gaps_alone) * 1000 if gaps_alone else 0.0,
            "gap_ms_median_during_long_prompt": median(during) * 1000 if during else 0.0,
            "gap_ms_max_during_long_prompt": max(during) * 1000 if during else 0.0,
            "tokens_during_long_prompt": len(during)}


def _gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in zip(times, times[1:])]


def _token_times(bench: Bench, submits: list[Submit], *chats: str) -> dict[str, list[float]]:
    """Every token's arrival per chat; `<chat>-submitted` when the stream's first turn went in. The first
    submit goes first and the rest once it streams, so the later ones land in the middle of its answer."""
    times: dict[str, list[float]] = {chat: [] for chat in chats}
    bench.loop.send(submits[0])
    times[f"{submits[0].chat_id}-submitted"] = [time.perf_counter()]
    pending = {s.chat_id for s in submits}
    rest = list(submits[1:])
    while pending:
        at, event = bench.next_event()
        chat = getattr(event, "chat_id", "")
        if isinstance(event, Token) and chat in times:
            times[chat].append(at)
            if rest and len(times[submits[0].chat_id]) >= 8:  # the stream is going: the others come in now
                for submit in rest:
                    times[f"{submit.chat_id}-submitted"] = [time.perf_counter()]
                    bench.loop.send(submit)
                rest = []
        elif isinstance(event, TurnFinished) and chat in pending:
            if event.reason not in ("stop", "length"):
                raise BenchError(f"Chat {chat} ended with {event.reason}: {event.message}")
            pending.discard(chat)
    return times


def models_table(result: dict[str, Any]) -> str:
    lines = [f"{' + '.join(result['models'])}: {result['tabs']} tabs each, {result['max_tokens']} tokens per tab, "
             f"best of {result['repeat']}",
             f"{'':>22} {'tok/s':>8} {'TTFT p50 ms':>12} {'TTFT p99 ms':>12}"]
    for name, run in zip(result["models"], result["alone"]):
        lines.append(f"{Path(name).name[:16] + ' alone':>22} {run['aggregate_tok_s']:8.1f} {run['ttft_ms_p50']:12.0f} "
                     f"{run['ttft_ms_p99']:12.0f}")
    both = result["both"]
    lines.append(f"{'both at once':>22} {both['aggregate_tok_s']:8.1f} {both['ttft_ms_p50']:12.0f} "
                 f"{both['ttft_ms_p99']:12.0f}")
    lines.append(f"both / harmonic mean alone ({result['harmonic_alone_tok_s']:.1f} tok/s): "
                 f"{result['aggregate_ratio']:.2f}x (goal >= 0.9); TTFT p99 both / alone: {result['ttft_ratio']:.2f}x "
                 "(goal <= 1.5)")
    lines.append(f"load on demand: {result['load_on_demand_ms']:.0f} ms to the first token")
    gaps = result["interleave"]
    lines.append(f"interleave: {gaps['streaming_model']} token gaps median {gaps['gap_ms_median_alone']:.0f} ms "
                 f"(max {gaps['gap_ms_max_alone']:.0f}) alone; while {gaps['reading_model']} read a long prompt "
                 f"({gaps['long_prompt_ms']:.0f} ms): median {gaps['gap_ms_median_during_long_prompt']:.0f} ms, "
                 f"max {gaps['gap_ms_max_during_long_prompt']:.0f} ms, {gaps['tokens_during_long_prompt']} tokens")
    return "\n".join(lines)
