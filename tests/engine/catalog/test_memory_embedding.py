"""The documents' GGUF embedding model in the memory estimate: its own bytes by hand, counted in the verdict."""

from __future__ import annotations

import dataclasses

from engine.catalog.memory import embedding_model_estimate, estimate, verdict
from engine.protocol import ModelConfig
from tests.engine.catalog.test_memory import MiB, RAM, TOY_GGUF


def test_the_embedder_is_its_file_and_one_context_of_its_length_on_the_cpu() -> None:
    result = embedding_model_estimate(TOY_GGUF, RAM, 512)
    # one sequence of 512 positions, f16: 2 x 4 layers x 2 KV heads x 128 dims x 512 x 2 bytes
    assert result.kv_cache_bytes == 2 * 4 * 2 * 128 * 512 * 2 == 2_097_152
    assert result.weights_bytes == 480 * MiB and result.prompt_copy_bytes == 0 and not result.on_gpu
    # runtime + the file's metadata pages + one logits row + a 512-token micro-batch's activations and
    # its scores over its own 512 cells (no flash attention: "auto" on the CPU with an f16 cache)
    overhead = 16 * MiB + 1 * MiB + 32000 * 4 + 512 * 1024 * 4 * 17 + 512 * 512 * 8 * 4
    assert result.overhead_bytes == overhead
    assert result.total_bytes == 480 * MiB + 2_097_152 + overhead == 567_407_616


def test_the_embedder_counts_in_ram_beside_the_chat_model() -> None:
    embedding = embedding_model_estimate(TOY_GGUF, RAM, 512).total_bytes
    cpu = estimate(TOY_GGUF, ModelConfig(path="toy.gguf", context_length=1024, slots=1, device="cpu"),
                   has_gpu=False, total_memory=RAM)
    both = dataclasses.replace(cpu, embedding_bytes=embedding)
    assert both.total_bytes == cpu.total_bytes + embedding == both.device_bytes
    assert both.after_load_bytes == cpu.after_load_bytes + embedding  # loaded whole with the first document
    free = cpu.total_bytes + embedding // 2  # the chat model fits; with the embedder it does not
    assert verdict(cpu, free, 8 << 30).level != "does not fit"
    judged = verdict(both, free, 8 << 30)
    assert judged.level == "does not fit" and judged.suggestion.startswith("Choose a smaller model")
    gpu = estimate(TOY_GGUF, ModelConfig(path="toy.gguf", context_length=1024, slots=1, device="cuda:0"),
                   has_gpu=True, total_memory=RAM)
    on_gpu = dataclasses.replace(gpu, embedding_bytes=embedding)  # the embedder stays on the CPU
    assert on_gpu.device_bytes == gpu.device_bytes and on_gpu.cpu_bytes == gpu.cpu_bytes + embedding
