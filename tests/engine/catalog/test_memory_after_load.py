"""The estimate's two figures: right after load, and with every chat full; hand-computed bytes, the verdict's words."""

from __future__ import annotations

import dataclasses

import pytest

from engine.catalog.memory import both_figures, estimate, kv_cache_bytes, verdict
from engine.protocol import ModelConfig
from tests.engine.catalog.test_memory import RAM, TOY_GGUF, TOY_HF

MiB = 1 << 20


def test_llama_cpp_on_the_cpu_grows_by_its_compute_buffer_only() -> None:
    """The KV cache is cleared (so resident) at load; the micro-batch's activations and, without flash
    attention, its scores over one chat's cells are touched only as prompts are read."""
    config = ModelConfig(path="toy.gguf", context_length=4096, slots=4, device="cpu", prompt_copy="off")
    result = estimate(TOY_GGUF, config, has_gpu=False, total_memory=RAM)
    activations, scores = 512 * 1024 * 4 * 17, 512 * 4096 * 8 * 4
    assert result.growth_bytes == activations + scores == 35_651_584 + 67_108_864
    assert result.after_load_bytes == result.total_bytes - activations - scores
    assert result.device_after_load_bytes == result.after_load_bytes
    # weights, the whole KV cache, the runtime, the metadata pages and 4 logits rows are there from the start
    runtime = 16 * MiB + 1 * MiB + 32000 * 4 * 4
    assert result.after_load_bytes == 480 * MiB + kv_cache_bytes(TOY_GGUF, 16384, 2.0) + runtime
    flash = estimate(TOY_GGUF, dataclasses.replace(config, flash_attention="on"), has_gpu=False, total_memory=RAM)
    assert flash.growth_bytes == activations and flash.after_load_bytes == result.after_load_bytes


def test_llama_cpp_on_a_gpu_has_its_buffers_whole_at_load() -> None:
    config = ModelConfig(path="toy.gguf", context_length=4096, slots=4, device="cuda:0")
    result = estimate(TOY_GGUF, config, has_gpu=True, total_memory=RAM)
    assert result.growth_bytes == 0
    assert result.device_after_load_bytes == result.device_bytes == result.gpu_bytes


def test_transformers_on_the_cpu_grows_its_cache_from_256_positions_and_a_steps_buffers() -> None:
    config = ModelConfig(path="toy", backend="hf", context_length=1024, slots=3, device="cpu")
    result = estimate(TOY_HF, config, has_gpu=False, total_memory=RAM)
    # fp32 cache of 3 slots: 1,024 positions each when full, 256 after the warm-up step
    full_kv, first_kv = 2 * 4 * 2 * 128 * 1024 * 3 * 4, 2 * 4 * 2 * 128 * 256 * 3 * 4
    transient = 512 * 1024 * 4 * 17 + 512 * 3072 * (1 + 3 * 4)
    assert result.kv_cache_bytes == full_kv and result.transient_bytes == transient
    assert result.growth_bytes == full_kv - first_kv + transient
    assert result.after_load_bytes == result.total_bytes - full_kv + first_kv - transient
    short = estimate(TOY_HF, dataclasses.replace(config, context_length=128), has_gpu=False, total_memory=RAM)
    assert short.growth_bytes == short.transient_bytes  # a context under 256 positions is whole from the start


def test_transformers_with_a_preallocated_cache_grows_by_a_steps_buffers_only() -> None:
    config = ModelConfig(path="toy", backend="hf", context_length=1024, slots=3)
    on_gpu = estimate(TOY_HF, dataclasses.replace(config, device="cuda:0"), has_gpu=True, total_memory=RAM)
    assert on_gpu.growth_bytes == on_gpu.transient_bytes > 0
    assert on_gpu.device_after_load_bytes == on_gpu.gpu_bytes - on_gpu.transient_bytes
    static = estimate(TOY_HF, dataclasses.replace(config, device="cpu", fast_decode="on"), has_gpu=False,
                      total_memory=RAM)
    assert static.growth_bytes == static.transient_bytes  # the fast decode's static cache is whole at load


def test_the_verdict_says_both_figures_and_is_judged_on_the_full_one() -> None:
    config = ModelConfig(path="toy.gguf", context_length=4096, slots=4, device="cpu", prompt_copy="off")
    result = estimate(TOY_GGUF, config, has_gpu=False, total_memory=RAM)
    assert result.after_load_bytes == 588_763_136 and result.total_bytes == 588_763_136 + 102_760_448
    assert both_figures(result) == "561 MiB once loaded, up to 659 MiB with every chat full"
    free = result.after_load_bytes + MiB  # room for it right after load, not once the chats fill
    judged = verdict(result, free_bytes=free, total_bytes=8 << 30)
    assert judged.level == "does not fit" and judged.suggestion
    assert judged.message == ("Needs about 561 MiB once loaded, up to 659 MiB with every chat full; "
                              "562 MiB of 8.0 GiB RAM free.")
    assert both_figures(result, "now") == "561 MiB now, up to 659 MiB with every chat full"


def test_one_figure_where_the_two_round_to_the_same() -> None:
    result = estimate(TOY_GGUF, ModelConfig(path="toy.gguf", device="cuda:0"), has_gpu=True, total_memory=RAM)
    assert verdict(result, 64 << 30, 80 << 30).message.startswith(f"Needs about {both_figures(result)}; ")
    assert "once loaded" not in both_figures(result)


def test_the_cpu_cache_start_is_the_runners_growth_step() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from engine.catalog.memory_hf import CPU_CACHE_START_POSITIONS
    from engine.runners.hf.cache import GROWTH_STEP

    assert CPU_CACHE_START_POSITIONS == GROWTH_STEP
