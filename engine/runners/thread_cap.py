"""HEARTH_THREADS: at most this many CPU threads for a model's passes, where Settings leave the count open.

For running Hearth beside other work that needs its cores, and for the test suite: its two worker
processes on a 2-core machine would otherwise each read prompts on both cores, and ggml's threads
wait for each other at every barrier when they outnumber the cores (the constrained-schema answers'
80 samples, two such processes at once: 55 s each, 37 s each at one thread apiece). Settings' own
thread count, where set, goes first.
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
