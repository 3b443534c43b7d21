"""llama.cpp's context parameters: how many threads, which attention kernel, which cache type."""

from __future__ import annotations

import os
import time
from typing import Callable

import llama_cpp

from engine.protocol import ModelConfig

# A step that generates takes every core while other processes use less than half a CPU, measured
# over the last SAMPLE_SECONDS (GenerationThreads).
IDLE_BELOW = 0.5
SAMPLE_SECONDS = 0.5
_NOT_BUSY = ("idle", "iowait", "guest", "guest_nice")  # Linux counts guest time in user already
KV_TYPES = {"f16": llama_cpp.GGML_TYPE_F16, "q8_0": llama_cpp.GGML_TYPE_Q8_0, "q4_0": llama_cpp.GGML_TYPE_Q4_0}
FLASH_ATTENTION = {
    "auto": llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO,
    "on": llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED,
    "off": llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED,
}


def flash_attention_type(config: ModelConfig, weights_on_gpu: bool) -> int:
    """What "auto" means here: the faster kernel for the device and cache type.

    llama.cpp's own "auto" turns flash attention on everywhere. On the CPU its kernel is the slower
    one where chats spend their time: generating after a 1,898-token prompt it ran at 9.8 tok/s
    against 29.6 without it, and read the prompt at 77 against 82 tok/s (2-core Intel Xeon, default
    model, f16 cache, one thread; README). A quantized V cache cannot work without it, and on a GPU
    it is the fast kernel, so there llama.cpp decides. Either way the rounding depends a little on
    where a chat's cells lie in its cache; the runner tests hold under both kernels.
    """
    if config.flash_attention != "auto":
        return FLASH_ATTENTION[config.flash_attention]
    if config.kv_cache_type != "f16":
        return llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED
    if weights_on_gpu:
        return llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO
    return llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED


def context_params(config: ModelConfig, context_length: int, weights_on_gpu: bool) -> llama_cpp.llama_context_params:
    params = llama_cpp.llama_context_default_params()
    params.n_ctx = context_length * config.slots
    params.n_seq_max = config.slots
    # One cache stream per chat, as llama-server does by default: without flash attention, a token of a
    # unified cache attends over every chat's cells (masked), so one chat generating beside three
    # others that hold 2,100 tokens each took 91 ms a token against 33 ms in its own stream (2-core
    # Xeon, default model, README). Each chat gets exactly its context length.
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
    """Generation and prompt threads when the settings leave it open.

    ggml's threads meet at a barrier many times per token; when one of them
    loses its core to another process, all of them wait, and generation collapses
    (measured on 2 cores beside other work: 1 thread 37-73 tok/s, 2 threads
    0.4-8 tok/s). So generation leaves one logical CPU to the window and the rest
    of the system while other processes are busy, and takes it only while they
    are idle (GenerationThreads); with SMT that is still every physical core. Reading a prompt is
    one long matrix product per layer, which keeps every core busy between
    barriers: two threads read it 1.9x faster on the quiet 2-core VM (196 against
    105 tok/s) and still a little faster beside a busy process (78 against 69), so
    prompt steps use every physical core (the runner switches per step).
    """
    import psutil

    logical = os.cpu_count() or 1
    physical = psutil.cpu_count(logical=False) or logical
    return max(1, min(physical, logical - 1)), max(1, physical)


class GenerationThreads:
    """Threads for a step that generates, drafts or not: every core while the rest of the machine is
    idle, else the generation count (default_threads).

    On the quiet 2-core VM two threads generate about 1.5x as fast as one: one chat 49-50 against
    31-35 tok/s, four chats 72-89 against 49-67 in total, with a stand-in for the window in the same
    process (3 ms of Python work every 1/60 s), which ran late by at most 4.5 ms at the 99th percentile
    either way. A step that checks drafts is a small matrix product and gains more (one chat at 600
    cells, 16 drafted tokens: 130 against 265 ms). Beside one busy process the second thread waits
    for its core at every barrier (16 drafted: 472 against 257 ms), and timing both counts online cost
    such a step at every try. So the choice follows what other processes used of the CPUs in the last
    half second (OtherLoad).
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
