"""`python -m engine.bench --api`: Hearth's HTTP server against llama-cpp-python's own, same model, prompts and run.

Both servers run as their own processes on 127.0.0.1 with the same model,
threads and context per request: `hearth-serve` (python -m engine.server) and
`python -m llama_cpp.server --interrupt_requests False` (by default it aborts
the running stream when a new request comes), started through
engine/bench/peer_server.py so it lays out weights as Hearth's runner does. For 1 and N clients at once,
each client streams the tab benchmark's story prompt to exactly max_tokens
(`ignore_eos` on Hearth, `min_tokens` on the peer), greedy. TTFT counts from
the moment all clients send (a queued request's wait included) to its first
content chunk; aggregate tokens/s is every client's tokens over the time until
the last one ended. `in_process_tab_tok_s` is one tab through the EngineLoop
in the same run, the figure one client should come close to.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Sequence

from engine.bench.harness import Bench, BenchError
from engine.bench.report import percentile
from engine.bench.workloads import STORY, run_tabs, story_request
from engine.protocol import ModelConfig

START_TIMEOUT_S = 180.0
CONTEXT = 4096


@dataclass
class Stream:
    """One client's request: when it got its first token and how many it got."""

    started_at: float
    first_token_at: float | None = None
    finished_at: float | None = None
    tokens: int = 0
    finish_reason: str = ""
    error: str = ""


def stream_once(port: int, index: int, max_tokens: int, extra: dict[str, Any], start: threading.Barrier) -> Stream:
    body = json.dumps({"messages": [{"role": "user", "content": f"{STORY} (Tab {index}.)"}], "max_tokens": max_tokens,
                       "temperature": 0, "stream": True, **extra}).encode()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    start.wait()
    stream = Stream(time.perf_counter())
    try:
        connection.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        if response.status != 200:
            stream.error = f"HTTP {response.status}: {response.read()[:300]!r}"
            return stream
        for line in response:
            if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
                continue
            choices = json.loads(line[6:]).get("choices") or [{}]
            if choices[0].get("delta", {}).get("content"):
                stream.tokens += 1
                stream.first_token_at = stream.first_token_at or time.perf_counter()
            stream.finish_reason = choices[0].get("finish_reason") or stream.finish_reason
        stream.finished_at = time.perf_counter()
        if stream.finish_reason == "length":
            # Both servers were told to run to max_tokens: that many tokens, even where a
            # chunk held two (a character split over tokens) and chunk counting would miss one.
            stream.tokens = max_tokens
    finally:
        connection.close()
    return stream


def run_clients(port: int, clients: int, max_tokens: int, extra: dict[str, Any]) -> dict[str, Any]:
    """`clients` streams sent at the same moment; the issue's four figures plus each TTFT."""
    start = threading.Barrier(clients)
    results: list[Stream] = [Stream(0.0)] * clients

    def one(index: int) -> None:
        results[index] = stream_once(port, index, max_tokens, extra, start)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failed = [r.error or "no token" for r in results if r.error or r.first_token_at is None]
    if failed:
        raise BenchError(f"A client failed: {failed[0]}")
    began = min(r.started_at for r in results)
    ended = max(r.finished_at or began for r in results)
    ttfts = sorted(((r.first_token_at or began) - began) * 1000 for r in results)
    return {"clients": clients, "aggregate_tok_s": sum(r.tokens for r in results) / (ended - began),
            "ttft_ms_p50": percentile(ttfts, 0.5), "ttft_ms_p99": percentile(ttfts, 0.99), "ttft_ms": ttfts}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_ready(process: subprocess.Popen[bytes], port: int, name: str) -> None:
    """Until GET /v1/models answers 200; BenchError if the process dies or it takes too long."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchError(f"{name} exited with {process.returncode} before it served")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/v1/models")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)  # a server starting up: nothing to wait on but its port
    raise BenchError(f"{name} did not answer within {START_TIMEOUT_S:.0f} s")


def serve_and_measure(command: Sequence[str], port: int, name: str, tabs: Sequence[int], max_tokens: int,
                      repeat: int, extra: dict[str, Any]) -> list[dict[str, Any]]:
    process = subprocess.Popen(list(command), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(process, port, name)
        run_clients(port, 1, 4, extra={})  # warm-up: first graph allocations, weights paged in
        return [best_run([run_clients(port, clients, max_tokens, extra) for _ in range(repeat)]) for clients in tabs]
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def best_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the highest aggregate: other processes only ever slow one down."""
    return max(runs, key=lambda run: run["aggregate_tok_s"])


def in_process_tab(config: ModelConfig, max_tokens: int, repeat: int) -> float:
    """One tab through the EngineLoop, its prompt warm in the cache as the servers' is after their warm-up."""
    bench = Bench()
    bench.loop.start()
    try:
        bench.load(config)
        speeds = []
        for run in range(repeat):
            bench.serve([story_request(f"warm-up-{run}", 0, 4)])  # the tab finds this slot by its prompt
            speeds.append(run_tabs(bench, 1, max_tokens)["aggregate_tok_s"])
        return max(speeds)
    finally:
        bench.loop.shutdown()


def measure_api(args: argparse.Namespace) -> dict[str, Any]:
    from engine.runners.llamacpp.params import default_threads

    threads = args.threads or default_threads()[0]
    slots = max(4, *args.tabs)
    config = ModelConfig(path=args.model, threads=threads, slots=slots, context_length=CONTEXT)
    tab = in_process_tab(config, args.max_tokens, args.repeat)
    hearth_port, peer_port = free_port(), free_port()
    hearth = serve_and_measure(
        [sys.executable, "-m", "engine.server", "--model", args.model, "--port", str(hearth_port),
         "--threads", str(threads), "--slots", str(slots), "--context", str(CONTEXT)],
        hearth_port, "hearth-serve", args.tabs, args.max_tokens, args.repeat, {"ignore_eos": True})
    peer = serve_and_measure(
        [sys.executable, "-m", "engine.bench.peer_server", "--model", args.model, "--host", "127.0.0.1",
         "--port", str(peer_port), "--n_threads", str(threads), "--n_threads_batch", str(threads),
         "--n_ctx", str(CONTEXT), "--interrupt_requests", "False"],
        peer_port, "llama_cpp.server", args.tabs, args.max_tokens, args.repeat, {"min_tokens": args.max_tokens})
    keys = ("clients", "aggregate_tok_s", "ttft_ms_p50", "ttft_ms_p99")
    return {
        "model": args.model, "threads": threads, "max_tokens": args.max_tokens, "repeat": args.repeat,
        "api": {"hearth": [{k: run[k] for k in keys} for run in hearth],
                "peer_llama_cpp_server": [{k: run[k] for k in keys} for run in peer],
                "in_process_tab_tok_s": tab},
        "api_ttft_ms": {"hearth": {str(r["clients"]): r["ttft_ms"] for r in hearth},
                        "peer_llama_cpp_server": {str(r["clients"]): r["ttft_ms"] for r in peer}},
    }


def api_table(result: dict[str, Any]) -> str:
    api = result["api"]
    lines = [f"{result['model']}, {result['threads']} thread(s), {result['max_tokens']} tokens per client, "
             f"best of {result['repeat']}", f"in-process tab: {api['in_process_tab_tok_s']:.1f} tok/s",
             f"{'server':<24} {'clients':>7} {'tok/s':>8} {'TTFT p50 ms':>12} {'TTFT p99 ms':>12}"]
    for name, key in (("hearth-serve", "hearth"), ("llama_cpp.server", "peer_llama_cpp_server")):
        for run in api[key]:
            lines.append(f"{name:<24} {run['clients']:>7} {run['aggregate_tok_s']:8.1f} {run['ttft_ms_p50']:12.0f} "
                         f"{run['ttft_ms_p99']:12.0f}")
    return "\n".join(lines)
