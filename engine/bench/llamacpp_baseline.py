"""llama-cpp-python's own speed on the same model and prompt: the baseline of `--backend llamacpp`."""

from __future__ import annotations

import time
from typing import Any, Iterator, cast

from engine.bench.workloads import STORY


def highlevel_tokens_per_second(
    path: str, max_tokens: int, repeat: int, threads: tuple[int, int], flash_attention: bool,
    after_first_token: bool = False,
) -> float:
    """`Llama.create_chat_completion(stream=True)`: tokens per second, best of `repeat` runs; with
    `after_first_token`, decoding only (the clock starts at the first token, which is not counted)."""
    import llama_cpp

    from engine.runners.llamacpp.load import same_model_params_for_highlevel

    with same_model_params_for_highlevel(path):
        llm = llama_cpp.Llama(model_path=path, n_ctx=4096, n_threads=threads[0], n_threads_batch=threads[1],
                              flash_attn=flash_attention, verbose=False)
    try:
        list(llm.create_chat_completion([{"role": "user", "content": "Hello"}], max_tokens=4, stream=True))
        speeds = []
        for _ in range(repeat):
            llm.reset()  # no prompt cache from the run before: both sides process the prompt
            started, count = time.perf_counter(), 0
            stream = cast(Iterator[dict[str, Any]], llm.create_chat_completion(
                [{"role": "user", "content": f"{STORY} (Tab 0.)"}], max_tokens=max_tokens, temperature=0.0,
                stream=True))
            first_at = 0.0
            for chunk in stream:
                if chunk["choices"][0]["delta"].get("content"):
                    count += 1
                    first_at = first_at or time.perf_counter()
            if after_first_token:  # the tokens after the first, over the time after it
                started, count = first_at, count - 1
            speeds.append(count / (time.perf_counter() - started))
        return max(speeds)
    finally:
        llm.close()
