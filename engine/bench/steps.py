"""The cost of a step of 1+k tokens of one chat against a step of 1 token: what decides whether drafts pay.

A draft of k tokens is checked by feeding them beside the chat's last token in
one `llama_decode`, every position's logits kept (as the runner's verification
does). Where decoding waits on memory, the k extra tokens ride on the same read
of the weights and the step costs little more than one token's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

PROMPT_TOKENS = 64  # the chat's cache before the timed steps
STEP_REPEATS = 5


def step_cost_ratios(path: str, threads: int, ks: Sequence[int] = (1, 2, 4, 8)) -> dict[str, float]:
    """{k: median time of a 1+k-token step / median time of a 1-token step}, same model, same threads."""
    import llama_cpp

    from engine.runners.llamacpp.load import same_model_params_for_highlevel

    llama_cpp.llama_backend_init()
    with same_model_params_for_highlevel(path):  # its buffer overrides live while the context manager does
        model = llama_cpp.llama_model_load_from_file(path.encode(), llama_cpp.llama_cpp.llama_model_default_params())
    if not model:
        raise RuntimeError(f"llama.cpp could not load {path}")
    params = llama_cpp.llama_context_default_params()
    params.n_ctx, params.n_batch, params.n_ubatch = 1024, 512, 512
    params.n_threads = params.n_threads_batch = threads
    context = llama_cpp.llama_init_from_model(model, params)
    batch = llama_cpp.llama_batch_init(512, 0, 1)
    memory = llama_cpp.llama_get_memory(context)
    try:
        _decode(context, batch, list(range(10, 10 + PROMPT_TOKENS)), 0)
        times = {k: _median_step(context, batch, memory, 1 + k) for k in (0, *ks)}
    finally:
        llama_cpp.llama_batch_free(batch)
        llama_cpp.llama_free(context)
        llama_cpp.llama_model_free(model)
    return {str(k): times[k] / times[0] for k in ks}


def _median_step(context: object, batch: object, memory: object, tokens: int) -> float:
    import llama_cpp

    seconds = []
    for repeat in range(STEP_REPEATS + 1):  # the first of each size allocates its graph: not counted
        started = time.perf_counter()
        _decode(context, batch, [100 + i for i in range(tokens)], PROMPT_TOKENS)
        if repeat:
            seconds.append(time.perf_counter() - started)
        llama_cpp.llama_memory_seq_rm(memory, 0, PROMPT_TOKENS, -1)
    return sorted(seconds)[len(seconds) // 2]


def _decode(context: object, batch: object, tokens: list[int], start: int) -> None:
    import llama_cpp

    batch.n_tokens = len(tokens)  # type: ignore[attr-defined]
    for i, token in enumerate(tokens):
        batch.token[i] = token  # type: ignore[attr-defined]
        batch.pos[i] = start + i  # type: ignore[attr-defined]
        batch.n_seq_id[i] = 1  # type: ignore[attr-defined]
        batch.seq_id[i][0] = 0  # type: ignore[attr-defined]
        batch.logits[i] = 1  # type: ignore[attr-defined]
    if llama_cpp.llama_decode(context, batch) != 0:
        raise RuntimeError("llama_decode failed")
