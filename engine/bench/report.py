"""The benchmark's figures condensed and written out: percentiles, best of repeats, the table."""

from __future__ import annotations

from typing import Any, Sequence

from engine.protocol import ModelConfig


def percentile(values: Sequence[float], share: float) -> float:
    ordered, position = sorted(values), (len(values) - 1) * share
    low, high = int(position), min(int(position) + 1, len(values) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def best(samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The best figure of each kind over repeated runs: other processes only ever slow a run down."""
    merged = dict(samples[0])
    for key in merged:
        values = [sample[key] for sample in samples]
        if key.endswith("tok_s"):
            merged[key] = max(values)
        elif key.endswith("_ms") or key.startswith("ttft"):
            merged[key] = min(values)
    return merged


def memory_figures(config: ModelConfig, measured: int) -> dict[str, int]:
    """The estimate's two figures (with every chat full, and right after load) next to the measured RSS
    growth; the measurement alone if the estimate fails."""
    from engine.catalog import models
    from engine.catalog.here import estimate_here

    try:
        result = estimate_here(models.describe(config.path), config)
    except Exception:  # noqa: BLE001 - an estimate that fails is reported as missing, not fatal
        return {"measured_bytes": measured}
    return {"estimated_bytes": result.total_bytes, "estimated_after_load_bytes": result.after_load_bytes,
            "measured_bytes": measured}


def table(result: dict[str, Any]) -> str:
    lines = [f"{result['model']} ({result['quantization']}, {result['device_detail']}, {result['attention']}), "
             f"{result['threads']}/{result['threads_batch']} threads, {result['max_tokens']} tokens per tab, "
             f"best of {result['repeat']}"]
    if result.get("prompt_reading"):
        lines.append(f"long prompts: {result['prompt_reading']}")
    if "runs" in result:
        lines += _engine_lines(result)
    if "constrained" in result:
        from engine.bench.constrained import constrained_lines

        return "\n".join(lines + constrained_lines(result))
    if "speculative" in result:  # the local backends measure drafts; a remote server's are its own business
        lines += _speculative_lines(result)
    if "memory" in result:
        memory = result["memory"]
        estimate = (f"estimated {memory['estimated_after_load_bytes'] / 2**20:.0f} MiB after load, "
                    f"{memory['estimated_bytes'] / 2**20:.0f} MiB with every chat full; "
                    if "estimated_bytes" in memory else "")
        lines.append(f"memory: {estimate}measured {memory['measured_bytes'] / 2**20:.0f} MiB (RSS growth)")
    return "\n".join(lines)


def _engine_lines(result: dict[str, Any]) -> list[str]:
    lines = []
    if "baseline_highlevel_tok_s" in result:
        lines.append(f"baseline, llama-cpp-python high-level: {result['baseline_highlevel_tok_s']:8.1f} tok/s")
    for key, name in (("baseline_generate_tok_s", "transformers generate"),
                      ("baseline_generate_batch_tok_s", "transformers generate_batch"),
                      ("baseline_sdk_tok_s", "openai client, 1 stream"),
                      ("baseline_sdk_concurrent_tok_s", "openai client, 4 streams")):
        if key in result:
            lines.append(f"baseline, {name}: {result[key]:8.1f} tok/s")
    lines.append(f"{'tabs':>5} {'tok/s':>8} {'TTFT p50 ms':>12} {'TTFT p99 ms':>12}")
    for run in result["runs"]:
        lines.append(f"{run['tabs']:>5} {run['aggregate_tok_s']:8.1f} {run['ttft_ms_p50']:12.0f} "
                     f"{run['ttft_ms_p99']:12.0f}")
    queue_ = result["queue"]
    lines.append(f"queue: {queue_['tabs']} requests one after another, TTFT p99 {queue_['ttft_ms_p99']:.0f} ms")
    reuse = result["kv_reuse"]
    lines.append(f"kv reuse: {reuse['history_tokens']} history tokens, cold TTFT {reuse['cold_ttft_ms']:.0f} ms, "
                 f"warm TTFT {reuse['warm_ttft_ms']:.0f} ms ({reuse['warm_reused_tokens']} tokens reused)")
    return lines


def _speculative_lines(result: dict[str, Any]) -> list[str]:
    """Drafts off and on, decoding only (prompts were read before the clock started)."""
    lines = [f"speculative decoding, {result['workload']} workload:",
             f"{'tabs':>5} {'off tok/s':>10} {'on tok/s':>9} {'on/off':>7} {'median pair':>12} {'drafts accepted':>16}"]
    for case in result["speculative"]:
        ratio = case["on_tok_s"] / case["off_tok_s"] if case["off_tok_s"] else 0.0
        lines.append(f"{case['tabs']:>5} {case['off_tok_s']:10.1f} {case['on_tok_s']:9.1f} {ratio:6.2f}x "
                     f"{case.get('on_off_median', ratio):11.2f}x {case['acceptance']:16.0%}")
        if case.get("source") == "draft model":
            lines.append(f"{'':>5} draft model: {case.get('accepted_fraction', 0.0):.0%} of its tokens accepted, "
                         f"{case.get('draft_ms_share', 0.0):.0%} of the time drafting (medians)")
    return lines
