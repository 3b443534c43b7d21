"""llama-cpp-python's own speed on the same model and prompt: the baseline of `--backend llamacpp`."""

from __future__ import annotations

import time
from typing import Any, Iterator, cast

from engine.bench.workloads import STORY


def highlevel_tokens_per_second(
    path: str, max_tokens: int, repeat: int, threads: tuple[int, int], flash_attention: bool
) -> float:
    """`Llama.create_chat_completion(stream=True)`: tokens per second, best of `repeat` runs."""
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
            for chunk in stream:
                count += 1 if chunk["choices"][0]["delta"].get("content") else 0
            speeds.append(count / (time.perf_counter() - started))
        return max(speeds)
    finally:
        llm.close()


def highlevel_decode_tokens_per_second(
    path: str, max_tokens: int, repeat: int, threads: tuple[int, int], flash_attention: bool
) -> float:
    """`Llama.generate`, the loop under its completions: tokens per second after the first, best of `repeat`.

    Tokens, not text chunks, are counted and no end-of-generation token stops it: a random-weight model
    (engine/bench/shapes.py) writes tokens without text and ends where it happens to."""
    import llama_cpp

    from engine.runners.llamacpp.load import same_model_params_for_highlevel

    with same_model_params_for_highlevel(path):
        llm = llama_cpp.Llama(model_path=path, n_ctx=4096, n_threads=threads[0], n_threads_batch=threads[1],
                              flash_attn=flash_attention, verbose=False)
    try:
        prompt = llm.tokenize(f"{STORY} (Tab 0.)".encode())
        speeds = []
        for _ in range(repeat):
            llm.reset()
            count, first_at = 0, 0.0
            for _token in llm.generate(prompt, top_k=1, temp=0.0, repeat_penalty=1.0):
                count += 1
                if count == 1:
                    first_at = time.perf_counter()
                if count > max_tokens:
                    break
            speeds.append((count - 1) / (time.perf_counter() - first_at))
        return max(speeds)
    finally:
        llm.close()
