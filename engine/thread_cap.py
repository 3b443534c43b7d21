"""HEARTH_THREADS: at most this many CPU threads for a chat model's passes where Settings leave the count
open, and for each voice model (2 otherwise).

For running Hearth beside other work that needs its cores, and for the test suite: its two worker
processes on a 2-core machine would otherwise each read prompts on both cores, and ggml's threads
wait for each other at every barrier when they outnumber the cores (the constrained-schema answers'
80 samples, two such processes at once: 55 s each, 37 s each at one thread apiece). A chat model's
thread count set in Settings goes first.
"""

from __future__ import annotations

import os

ENV = "HEARTH_THREADS"


def thread_cap() -> int | None:
    """The cap HEARTH_THREADS sets, or None (unset, not a whole number, or below 1)."""
    try:
        cap = int(os.environ.get(ENV, "").strip())
    except ValueError:
        return None
    return cap if cap > 0 else None


def capped(threads: int) -> int:
    """`threads`, or the cap where it is lower."""
    cap = thread_cap()
    return min(threads, cap) if cap else threads
