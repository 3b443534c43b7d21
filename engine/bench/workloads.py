"""What the benchmark asks: the prompts, and the three cases it runs through the engine.

Tabs at once (aggregate tokens/s, time to first token), the same requests one
after another (what a one-sequence engine does), and a second turn over a long
history, cold and from the KV cache. Every request is greedy without a repeat
penalty (as an OpenAI-style API client asks by default); the story runs to
max tokens whatever the model says (ignore_eos), so every run does equal work.
"""

from __future__ import annotations

import time
from typing import Any

from engine.bench.harness import Bench
from engine.bench.report import percentile
from engine.protocol import ChatMessage, CloseChat, SamplingParams, Submit

STORY = "Write a long story about a lighthouse keeper who finds a message in a bottle."
PLACES = ("harbour", "mill", "library", "orchard", "bridge", "market", "forge", "chapel")
THINGS = ("lantern", "ledger", "barrel", "compass", "kettle", "ribbon", "anchor", "violin")


def story_request(chat_id: str, tab: int, max_tokens: int) -> Submit:
    params = SamplingParams(temperature=0, repeat_penalty=1.0, ignore_eos=True, max_new_tokens=max_tokens)
    return Submit(chat_id, (ChatMessage("user", f"{STORY} (Tab {tab}.)"),), params)


def _note(day: int) -> str:
    return (f"On day {day} the keeper walked to the {PLACES[day % 8]} and found a {THINGS[(day * 3) % 8]} "
            f"that had not been there on day {day - 1}.")


HISTORY_PAIRS = 6  # the long history's pairs of notes and replies: about 2,000 tokens


def history(pairs: int = HISTORY_PAIRS, notes: int = 11) -> list[ChatMessage]:
    """A conversation of user notes and short replies, about 330 tokens a pair (SmolLM2's tokenizer)."""
    messages = [ChatMessage("system", "You are a careful assistant who remembers long conversations.")]
    for pair in range(pairs):
        first = pair * notes + 1
        text = " ".join(_note(day) for day in range(first, first + notes))
        messages.append(ChatMessage("user", f"Please remember these notes. {text}"))
        messages.append(ChatMessage("assistant", f"I have noted days {first} to {first + notes - 1}."))
    return messages


def run_tabs(bench: Bench, tabs: int, max_tokens: int) -> dict[str, Any]:
    started = time.perf_counter()
    turns = bench.serve([story_request(f"tabs{tabs}-{i}", i, max_tokens) for i in range(tabs)])
    elapsed = time.perf_counter() - started
    generated = sum(t.finished.stats.generated_tokens for t in turns if t.finished)
    ttfts = [t.ttft_s * 1000 for t in turns]
    for turn in turns:
        bench.loop.send(CloseChat(turn.chat_id))
    return {"tabs": tabs, "aggregate_tok_s": generated / elapsed, "ttft_ms_p50": percentile(ttfts, 0.5),
            "ttft_ms_p99": percentile(ttfts, 0.99), "generated_tokens": generated}


def run_queue(bench: Bench, tabs: int, max_tokens: int) -> dict[str, Any]:
    """The same requests, all arriving at once but served one after another."""
    arrived = time.perf_counter()
    ttfts = []
    for i in range(tabs):
        turn = bench.serve([story_request(f"queue-{i}", i, max_tokens)])[0]
        ttfts.append((turn.submitted_at - arrived + turn.ttft_s) * 1000)
        bench.loop.send(CloseChat(turn.chat_id))
    return {"tabs": tabs, "ttft_ms_p50": percentile(ttfts, 0.5), "ttft_ms_p99": percentile(ttfts, 0.99)}


def run_kv_reuse(bench: Bench, context_length: int, pairs: int = HISTORY_PAIRS) -> dict[str, Any]:
    params = SamplingParams(temperature=0, repeat_penalty=1.0, max_new_tokens=16)
    # `pairs` of notes and replies (6: ~2,000 tokens) where the context allows it; a tiny test model gets a
    # short history.
    pairs, notes = (pairs, 11) if context_length >= 4096 else (1, 2)
    messages = history(pairs, notes) + [ChatMessage("user", "What did the keeper find on day 3?")]
    cold = bench.serve([Submit("history", tuple(messages), params)])[0]
    answer = cold.finished.text if cold.finished else ""
    messages += [ChatMessage("assistant", answer), ChatMessage("user", "And on day 4?")]
    warm = bench.serve([Submit("history", tuple(messages), params)])[0]
    bench.loop.send(CloseChat("history"))
    return {"history_tokens": cold.prompt_tokens, "cold_ttft_ms": cold.ttft_s * 1000,
            "warm_ttft_ms": warm.ttft_s * 1000, "warm_prompt_tokens": warm.prompt_tokens,
            "warm_reused_tokens": warm.reused_tokens}
