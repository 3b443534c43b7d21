"""llama.cpp's context parameters: how many threads, which attention kernel, which cache type.

The thread rules: a step that reads a prompt uses every physical core (one long matrix product per
layer keeps them all busy between ggml's barriers). A step that generates uses every core only while
other processes leave the CPUs idle (GenerationThreads, OtherLoad), else one logical CPU fewer
(default_threads), because a thread that loses its core to another process stalls the others at every
barrier. The thresholds and their measurements are in engine/tuning.py.
"""

from __future__ import annotations

import os
import time
from typing import Callable

import llama_cpp

from engine.catalog.flash_rule import llamacpp_flash_attention
from engine.protocol import ModelConfig
from engine.thread_cap import thread_cap
from engine.tuning import (
    GENERATION_IDLE_BELOW_CPUS,
    GENERATION_SPARE_CPUS,
    LOAD_SAMPLE_SECONDS,
)

IDLE_BELOW = GENERATION_IDLE_BELOW_CPUS  # others' CPUs busy under which a generating step takes every core
SAMPLE_SECONDS = LOAD_SAMPLE_SECONDS  # how often the other processes' load is read
_NOT_BUSY = ("idle", "iowait", "guest", "guest_nice")  # Linux counts guest time in user already
KV_TYPES = {"f16": llama_cpp.GGML_TYPE_F16, "q8_0": llama_cpp.GGML_TYPE_Q8_0, "q4_0": llama_cpp.GGML_TYPE_Q4_0}
FLASH_ATTENTION = {
    "auto": llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO,
    "on": llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED,
    "off": llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED,
}


def flash_attention_type(config: ModelConfig, weights_on_gpu: bool) -> int:
    """llama.cpp's constant for catalog/flash_rule.py's choice (the estimate counts by the same rule)."""
    choice = llamacpp_flash_attention(config, weights_on_gpu)
    return llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO if choice == "llama.cpp" else FLASH_ATTENTION[choice]


def context_params(config: ModelConfig, context_length: int, weights_on_gpu: bool) -> llama_cpp.llama_context_params:
    params = llama_cpp.llama_context_default_params()
    params.n_ctx = context_length * config.slots
    params.n_seq_max = config.slots
    # One cache stream per chat, as llama-server does by default: in a unified cache a token attends
    # over every chat's cells (masked out, but computed), so a chat beside long ones generates slower.
    # Each chat gets exactly its context length.
    params.kv_unified = False
    params.n_batch = max(config.batch_tokens, config.slots)  # every slot's decode token fits one step
    params.n_ubatch = min(params.n_batch, 512)  # llama.cpp's default physical batch
    if config.threads:
        params.n_threads = params.n_threads_batch = config.threads
    else:
        params.n_threads, params.n_threads_batch = default_threads()
    params.flash_attn_type = flash_attention_type(config, weights_on_gpu)
    params.type_k = params.type_v = KV_TYPES[config.kv_cache_type]
    params.no_perf = True
    return params


def default_threads() -> tuple[int, int]:
    """(generation threads, prompt threads) when the settings leave it open.

    Generation: the physical cores, but GENERATION_SPARE_CPUS logical CPUs fewer than the machine has
    (left to the window and the rest of the system; with SMT that is still every physical core).
    GenerationThreads adds them back while the rest of the machine is idle. Prompts: every physical
    core. The runner switches between the two per step. HEARTH_THREADS caps both (engine/thread_cap.py).
    """
    import psutil

    logical = os.cpu_count() or 1
    physical = psutil.cpu_count(logical=False) or logical
    generation, prompt = max(1, min(physical, logical - GENERATION_SPARE_CPUS)), max(1, physical)
    cap = thread_cap()
    return (min(generation, cap), min(prompt, cap)) if cap else (generation, prompt)


class GenerationThreads:
    """Threads for a step that generates, drafts or not: the prompt count (every physical core) while
    other processes keep fewer than IDLE_BELOW CPUs busy (OtherLoad), else the generation count.

    The choice follows the other processes' load rather than timing both counts, because trying the
    slower one online costs a slow step each time.
    """

    def __init__(self, generation: int, prompt: int, others: Callable[[], float] | None = None) -> None:
        self.generation, self.prompt = generation, prompt
        self._others = others or OtherLoad()

    def pick(self) -> int:
        if self.generation >= self.prompt:
            return self.prompt
        return self.prompt if self._others() < IDLE_BELOW else self.generation


class OtherLoad:
    """How many CPUs other processes kept busy lately (steal time included: on a VM that is another
    guest); a new reading at most every SAMPLE_SECONDS, and "busy" until the first one."""

    def __init__(self) -> None:
        import psutil

        self._process = psutil.Process()
        self._at, self._busy, self._own = time.monotonic(), *self._read()
        self._value = float("inf")

    def _read(self) -> tuple[float, float]:
        import psutil

        system = psutil.cpu_times()._asdict()
        busy = sum(value for name, value in system.items() if name not in _NOT_BUSY)
        own = self._process.cpu_times()
        return busy, own.user + own.system

    def __call__(self) -> float:
        now = time.monotonic()
        if now - self._at >= SAMPLE_SECONDS:
            busy, own = self._read()
            self._value = max(0.0, (busy - self._busy) - (own - self._own)) / (now - self._at)
            self._at, self._busy, self._own = now, busy, own
        return self._value
