"""`python -m engine.bench --backend remote --url URL`: Hearth's remote backend against the openai client, same server.

The tab cases run through the real EngineLoop with the remote backend, as for
the local backends, and their figures go under the same keys. In the same run
the `openai` client streams the very same request body (engine/remote/stream.py
builds both) straight from the same server: once alone (`baseline_sdk_tok_s`)
and, when 4 tabs are measured, 4 at once (`baseline_sdk_concurrent_tok_s`).
Tokens are counted alike on both sides: the server's usage when it sends one,
else one per content chunk. Every request runs to max_tokens (ignore_eos and
min_tokens: vLLM and llama-server read one or the other).
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

from engine.bench.harness import Bench, BenchError
from engine.bench.report import best
from engine.bench.workloads import run_kv_reuse, run_queue, run_tabs, story_request
from engine.protocol import CloseChat, ModelConfig, ModelInfo
from engine.remote.errors import base_url
from engine.remote.stream import request_body

CONCURRENT = 4


def measure_remote(args: argparse.Namespace) -> dict[str, Any]:
    config = ModelConfig(path=base_url(args.url), backend="remote", remote_model=args.remote_model or "",
                         api_key=args.api_key or "", slots=max(CONCURRENT, *args.tabs))
    info, samples = _run_cases(config, args)
    result: dict[str, Any] = {
        "model": info.name, "path": info.path, "backend": "remote", "quantization": "(the server's)",
        "device": "remote", "device_detail": info.device, "attention": "(the server's)", "threads": 0,
        "threads_batch": 0, "max_tokens": args.max_tokens, "repeat": args.repeat,
        "runs": [best([runs[i] for runs, _, _ in samples]) for i in range(len(args.tabs))],
        "queue": best([queue_ for _, queue_, _ in samples]),
        "kv_reuse": best([reuse for _, _, reuse in samples]),
    }
    result["baseline_sdk_tok_s"] = max(sdk_streams(config, info.name, 1, args.max_tokens) for _ in range(args.repeat))
    if CONCURRENT in args.tabs:
        result["baseline_sdk_concurrent_tok_s"] = max(
            sdk_streams(config, info.name, CONCURRENT, args.max_tokens) for _ in range(args.repeat))
    return result


def _run_cases(config: ModelConfig, args: argparse.Namespace) -> tuple[ModelInfo, list[Any]]:
    bench = Bench()
    bench.loop.start()
    try:
        info = bench.load(config)
        bench.serve([story_request("warm-up", 0, 4)])
        bench.loop.send(CloseChat("warm-up"))
        samples = [(
            [run_tabs(bench, tabs, args.max_tokens) for tabs in args.tabs],
            run_queue(bench, CONCURRENT, args.max_tokens),
            run_kv_reuse(bench, info.context_length or 4096, args.history_pairs),
        ) for _ in range(args.repeat)]
    finally:
        bench.loop.shutdown()
    return info, samples


def sdk_streams(config: ModelConfig, model: str, clients: int, max_tokens: int) -> float:
    """Aggregate tokens/s of `clients` openai-client streams sent at once, the tab benchmark's requests."""
    from openai import OpenAI

    client = OpenAI(base_url=base_url(config.path) + "/v1", api_key=config.api_key or "none", max_retries=0)
    counts = [0] * clients
    errors: list[str] = []
    start = threading.Barrier(clients + 1)

    def one(index: int) -> None:
        _, body = request_body(model, story_request(f"sdk-{index}", index, max_tokens))
        standard = {key: body.pop(key) for key in ("model", "messages", "max_tokens", "temperature", "top_p",
                                                   "stream", "stream_options", "seed") if key in body}
        start.wait()
        try:
            counts[index] = _count(client.chat.completions.create(**standard, extra_body=body))
        except Exception as error:  # noqa: BLE001 - reported once, below
            errors.append(str(error))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    client.close()
    if errors:
        raise BenchError(f"The openai client failed: {errors[0]}")
    return sum(counts) / elapsed


def _count(stream: Any) -> int:
    chunks, usage = 0, 0
    for chunk in stream:
        if chunk.usage is not None and chunk.usage.completion_tokens:
            usage = chunk.usage.completion_tokens
        if chunk.choices and chunk.choices[0].delta.content:
            chunks += 1
    return usage or chunks
