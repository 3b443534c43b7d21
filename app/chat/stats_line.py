"""The line of numbers under a finished answer: tokens, speed, first token, cache reuse, drafts, tokens the format
fixed, how it ended."""

from __future__ import annotations

from app.bridge import TurnFinished


def stats_line(event: TurnFinished) -> str:
    stats = event.stats
    parts = [
        f"{stats.generated_tokens} tokens",
        f"{stats.decode_tokens_per_second:.1f} tok/s",
        f"first token {stats.time_to_first_token_s * 1000:.0f} ms",
        f"{stats.reused_tokens} of {stats.prompt_tokens} prompt tokens reused",
    ]
    if stats.acceptance is not None:
        parts.append(f"{stats.acceptance:.0%} of {stats.drafted_tokens} drafted tokens accepted")
    if stats.forced_tokens:  # a tool call's or a schema's fixed parts, read without sampling (a key and its quotes)
        parts.append(f"{stats.forced_tokens} fixed by the format")
    if event.reason == "cancelled":
        parts.append("stopped")
    elif event.reason == "length":
        parts.append("reached the token limit")
    elif event.reason == "interrupted":
        parts.append("interrupted: Regenerate to answer again")
    return " · ".join(parts)
