"""`python -m engine.bench --shape NAME --quant Q`: one row of speed at a real model's size, against the machine's limits.

The file is a random-weight GGUF of the shape (engine/bench/shapes.py): the
speed and memory are the real model's, its text is noise. Parts (`--size-parts`)
let a large shape be measured in several commands; a row holds the parts run.
Decoding is timed after each chat's prompt is in its cache (engine/bench/harness.py,
decode_timed); the 4-tab TTFT and the peer's figures count from the request.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from engine.bench.harness import Bench, decode_timed
from engine.bench.workloads import _note, run_tabs, story_request
from engine.protocol import ChatMessage, CloseChat, ModelConfig, SamplingParams, Submit

PARTS = ("limits", "decode", "prompt", "memory", "highlevel", "peer", "steps")
TABS = (1, 4, 8)
CONTEXT = 4096  # per chat: a 2,048-token prompt and its answer fit
PROMPT_NOTES = 76  # notes of ~27 tokens: a prompt of about 2,048 tokens
FILL_NOTES = 146  # 3,905 tokens (bundled tokenizer): one chat's cache nearly full, read at its widest attention


def long_prompt(notes: int = PROMPT_NOTES, chat_id: str = "prompt-2048") -> Submit:
    text = " ".join(_note(day) for day in range(1, notes + 1))
    return Submit(chat_id, (ChatMessage("user", f"Please remember these notes. {text}"),),
                  SamplingParams(temperature=0, repeat_penalty=1.0, max_new_tokens=1))


def measure_size(args: argparse.Namespace) -> dict[str, Any]:
    """{"size": [row], ...}: the parts asked for, the row's keys where they were measured."""
    from engine.bench.measure import _threads

    parts = set(args.size_parts)
    threads = _threads(args)
    row: dict[str, Any] = {"shape": args.shape, "quant": args.quant, "file_bytes": _file_bytes(args.model),
                           "threads": threads[0], "load_average": _load_average()}
    config = ModelConfig(path=args.model, threads=args.threads, slots=max(TABS), context_length=CONTEXT,
                         prompt_copy=args.prompt_copy)
    if "limits" in parts:
        row.update(_limits(args.model, threads[0], args.max_tokens))
    if parts & {"decode", "prompt", "memory"}:
        row.update(_engine_parts(config, parts, args.max_tokens))
    if "highlevel" in parts:
        from engine.bench.llamacpp_baseline import highlevel_decode_tokens_per_second

        flash = row.get("attention", "").startswith("flash attention on")
        row["highlevel_tok_s"] = highlevel_decode_tokens_per_second(args.model, args.max_tokens, args.repeat, threads,
                                                                    flash)
    if "peer" in parts:
        row.update(_peer(args.model, threads[0], args.max_tokens))
    if "steps" in parts:
        from engine.bench.steps import step_cost_ratios

        row["step_cost_ratio"] = step_cost_ratios(args.model, threads[0])
    row["load_average_after"] = _load_average()
    return {"size": [row], "max_tokens": args.max_tokens, "parts": sorted(parts),
            "note": "random weights of the shape: real speed and memory, not real text"}


def _engine_parts(config: ModelConfig, parts: set[str], max_tokens: int) -> dict[str, Any]:
    """Decode, prompt and memory through one EngineLoop: RSS growth after load, and after the other parts."""
    import psutil

    from engine.bench.report import memory_figures

    process = psutil.Process()
    row: dict[str, Any] = {}
    bench = Bench()
    bench.loop.start()
    try:
        before = process.memory_info().rss
        info = bench.load(config)
        bench.serve([story_request("warm-up", 0, 4)])
        bench.loop.send(CloseChat("warm-up"))
        loaded = process.memory_info().rss - before
        row["attention"], row["prompt_reading"] = info.attention, info.prompt_reading
        if "decode" in parts:
            row.update(_decode(bench, max_tokens))
        if "prompt" in parts:
            row.update(_prompt(bench))
        if "memory" in parts:
            # the estimate is for chats at their full context: one chat's prompt read to nearly all of it
            filled = bench.serve([long_prompt(FILL_NOTES, "fill")])[0]
            bench.loop.send(CloseChat("fill"))
            row["filled_tokens"] = filled.prompt_tokens
        full = process.memory_info().rss - before
    finally:
        bench.loop.shutdown()
    if "memory" in parts:
        row.update(memory_row(memory_figures(config, loaded), full))
    return row


def _file_bytes(path: str) -> int:
    import os

    return os.path.getsize(path)


def _load_average() -> list[float]:
    import os

    return [round(value, 2) for value in os.getloadavg()]


def _limits(path: str, threads: int, max_tokens: int) -> dict[str, Any]:
    from engine.bench.limits import limits

    # a story turn's decoding runs from ~40 prompt tokens to 40 + max_tokens: its middle position
    figures = limits(path, threads, 40 + max_tokens // 2, 2048)
    return {key: figures[key] for key in ("decode_limit_tok_s", "prompt_limit_tok_s", "read_bandwidth_gb_s",
                                          "gemm_gflop_s", "bytes_per_token")}


def _decode(bench: Bench, max_tokens: int) -> dict[str, Any]:
    speeds = {}
    for tabs in TABS:
        requests = [story_request(f"size-{tabs}-{i}", i, max_tokens) for i in range(tabs)]
        elapsed, turns = decode_timed(bench, requests)
        speeds[str(tabs)] = sum(t.finished.stats.generated_tokens for t in turns if t.finished) / elapsed
    four = run_tabs(bench, 4, max_tokens)  # from the request: prompts read while the others decode
    return {"decode_tok_s": speeds, "ttft_ms_p50_4": four["ttft_ms_p50"], "ttft_ms_p99_4": four["ttft_ms_p99"],
            "tabs_4_wall_tok_s": four["aggregate_tok_s"]}


def _prompt(bench: Bench) -> dict[str, Any]:
    started = time.perf_counter()
    turn = bench.serve([long_prompt()])[0]
    seconds = turn.ttft_s if turn.first_token_at is not None else time.perf_counter() - started
    bench.loop.send(CloseChat(turn.chat_id))
    return {"prompt_tokens": turn.prompt_tokens, "prompt_tok_s": turn.prompt_tokens / seconds}


def memory_row(figures: dict[str, int], full: int) -> dict[str, Any]:
    """Each figure of the estimate against its own measurement: the one after load against the RSS after
    load, the one with every chat full against the RSS with a chat filled (the errors are estimate / RSS - 1)."""
    estimated, after_load = figures.get("estimated_bytes"), figures.get("estimated_after_load_bytes")
    row: dict[str, Any] = {"estimated_bytes": estimated, "estimated_after_load_bytes": after_load,
                           "rss_after_load_bytes": figures["measured_bytes"], "rss_kv_full_bytes": full}
    if estimated and after_load:
        row["estimate_error"] = {"after_load": after_load / figures["measured_bytes"] - 1.0,
                                 "kv_full": estimated / full - 1.0}
    return row


def _peer(path: str, threads: int, max_tokens: int) -> dict[str, Any]:
    """llama_cpp.server, started as the API bench starts it, 4 streams at once."""
    from engine.bench.api import free_port, serve_and_measure

    port = free_port()
    [run] = serve_and_measure(
        [sys.executable, "-m", "engine.bench.peer_server", "--model", path, "--host", "127.0.0.1", "--port", str(port),
         "--n_threads", str(threads), "--n_threads_batch", str(threads), "--n_ctx", str(CONTEXT),
         "--interrupt_requests", "False"],
        port, "llama_cpp.server", [4], max_tokens, 1, {"min_tokens": max_tokens})
    return {"peer_server_4_tok_s": run["aggregate_tok_s"], "peer_ttft_ms_p99_4": run["ttft_ms_p99"]}


def merged(previous: dict[str, Any] | None, result: dict[str, Any]) -> dict[str, Any]:
    """`result` added to what an earlier `--json` file of the same folder held: a row of the same shape and
    quantization takes the new parts' keys (a big shape measured in several commands), other rows stay."""
    if not previous or "size" not in previous:
        return result
    rows = [dict(row) for row in previous["size"]]
    for new in result["size"]:
        same = [row for row in rows if (row["shape"], row["quant"]) == (new["shape"], new["quant"])]
        if same:
            same[0].update(new)
        else:
            rows.append(new)
    return {**result, "size": rows, "parts": sorted(set(previous.get("parts", [])) | set(result["parts"]))}


# ---------------------------------------------------------------- the table

COLUMNS = (("shape", "{}"), ("quant", "{}"), ("file_bytes", "GiB"), ("decode_tok_s", "tabs"), ("highlevel_tok_s", ".1f"),
           ("peer_server_4_tok_s", ".1f"), ("decode_limit_tok_s", ".1f"), ("prompt_tok_s", ".1f"),
           ("prompt_limit_tok_s", ".1f"), ("ttft_ms_p99_4", ".0f"), ("estimate_error", "error"),
           ("step_cost_ratio", "ratios"))


def size_table(result: dict[str, Any]) -> str:
    """One line per row, a dash where a part was not run; the note on random weights first."""
    lines = [f"speed at size ({result['note']}); decode tok/s at tabs 1/4/8, {result['max_tokens']} tokens per tab",
             " | ".join(key for key, _ in COLUMNS)]
    for row in result["size"]:
        lines.append(" | ".join(_cell(row.get(key), style) for key, style in COLUMNS))
        if "load_average" in row:
            lines.append(f"  load average before {row['load_average']}, after {row.get('load_average_after')}; "
                         f"{row['threads']} threads; {row.get('attention', '')}")
    return "\n".join(lines)


def _cell(value: Any, style: str) -> str:
    if value is None:
        return "-"
    if style == "GiB":
        return f"{value / 2**30:.2f} GiB"
    if style == "tabs":
        return "/".join(f"{value[k]:.1f}" for k in sorted(value, key=int))
    if style == "error":
        return f"{value['after_load']:+.1%} / {value['kv_full']:+.1%}"
    if style == "ratios":
        return " ".join(f"{k}:{v:.2f}" for k, v in sorted(value.items(), key=lambda item: int(item[0])))
    return format(value, style) if style != "{}" else str(value)
