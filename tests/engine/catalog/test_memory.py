"""The memory estimate: hand-computed bytes, the verdict, the probes, and a real measurement."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine.catalog.description import ModelDescription
from engine.catalog.here import estimate_here
from engine.catalog.memory import (
    Estimate,
    estimate,
    kv_cache_bytes,
    prompt_copy_wanted,
    suggest,
    verdict,
)
from engine.catalog.models import describe
from engine.protocol import ModelConfig

MiB = 1 << 20
RAM = 32 << 30  # the machine the estimates are made for, where a test does not say
# A GGUF shaped by hand: 4 layers of 100 MiB, a 50 MiB output head, 30 MiB of token embeddings
TOY_GGUF = ModelDescription(
    path="toy.gguf", kind="gguf", name="toy", architecture="llama", n_params=10**9, file_bytes=481 * MiB,
    quantization="Q8_0", trained_context_length=32768, layers=4, heads=8, kv_heads=2, head_dim=128,
    embedding_length=1024, vocab_size=32000, tensor_bytes=480 * MiB, layer_bytes=(100 * MiB,) * 4,
    output_bytes=50 * MiB)
TOY_HF = dataclasses.replace(TOY_GGUF, path="toy", kind="hf", quantization="bf16", n_params=1_000_000,
                             unquantized_params=200_000, dtype="bfloat16", tensor_bytes=2_000_000,
                             layer_bytes=(), output_bytes=0)


def test_kv_cache_bytes_by_hand() -> None:
    # 2 (K and V) x 4 layers x 2 KV heads x 128 dims x 1000 positions x 2 bytes
    assert kv_cache_bytes(TOY_GGUF, 1000, 2.0) == 2 * 4 * 2 * 128 * 1000 * 2 == 4_096_000


@pytest.mark.parametrize(("kv_type", "bytes_per_element"), [("f16", 2), ("q8_0", 34 / 32), ("q4_0", 18 / 32)])
def test_llamacpp_kv_cache_is_one_stream_per_slot(kv_type: str, bytes_per_element: float) -> None:
    config = ModelConfig(path="toy.gguf", context_length=4096, slots=4, kv_cache_type=kv_type)  # type: ignore[arg-type]
    result = estimate(TOY_GGUF, config, has_gpu=False, total_memory=RAM)
    assert result.kv_cells == 16384
    assert result.kv_cache_bytes == int(2 * 4 * 2 * 128 * 16384 * bytes_per_element)
    assert result.weights_bytes == 480 * MiB
    assert result.kv_explanation() == "4 KV caches of 4,096 positions, one per chat, all reserved at load."


def test_default_model_estimate_by_hand(default_model: str) -> None:
    model = describe(default_model)
    result = estimate(model, ModelConfig(path=default_model), has_gpu=False, total_memory=RAM)  # the engine's defaults: 4096 x 4 slots, f16, batch 512
    # SmolLM2-135M: 2 x 30 layers x 3 KV heads x 64 dims x 16384 cells x 2 bytes
    assert result.kv_cache_bytes == 377_487_360
    assert result.weights_bytes == model.tensor_bytes
    # runtime 16 MiB + GGUF metadata pages + logits of 4 slots + 512 tokens x 576 dims x 17 floats x 4 bytes
    # + without flash attention ("auto" on the CPU) one chat's scores: 512 tokens x 4,096 cells x 9 heads x 4 bytes
    overhead = (16 * MiB + (model.file_bytes - model.tensor_bytes) + 49152 * 4 * 4 + 512 * 576 * 17 * 4
                + 512 * 4096 * 9 * 4)
    assert result.overhead_bytes == overhead
    assert result.gpu_bytes == 0 and result.cpu_bytes == result.total_bytes


def test_gpu_share_follows_the_layer_count() -> None:
    config = ModelConfig(path="toy.gguf", context_length=1024, slots=1, gpu_layers=2, device="cuda:0")
    result = estimate(TOY_GGUF, config, has_gpu=False, total_memory=RAM)
    kv = 2 * 4 * 2 * 128 * 1024 * 2
    assert result.on_gpu and result.gpu_layers == 2
    # the last two layers and half the KV cache go to the GPU; the output head stays (2 < 4 layers)
    gpu_overhead = result.gpu_bytes - 200 * MiB - kv // 2
    assert 400 * MiB <= gpu_overhead < 450 * MiB  # CUDA context and the compute buffer
    everything = estimate(TOY_GGUF, dataclasses.replace(config, gpu_layers=-1), has_gpu=False, total_memory=RAM)
    assert everything.gpu_bytes - result.gpu_bytes >= 200 * MiB + 50 * MiB + kv // 2
    # device "auto" uses the GPU only when there is one; "cpu" never
    assert estimate(TOY_GGUF, dataclasses.replace(config, device="auto"), has_gpu=False, total_memory=RAM).gpu_bytes == 0
    assert estimate(TOY_GGUF, dataclasses.replace(config, device="cpu"), has_gpu=True, total_memory=RAM).gpu_bytes == 0


def test_repacked_matrices_count_twice_on_the_layers_left_on_the_cpu() -> None:
    """llama.cpp keeps a repacked copy of Q4_0/Q4_K/IQ4_NL layer matrices beside the mapped file."""
    repacking = dataclasses.replace(TOY_GGUF, quantization="Q4_0", repacked_bytes=80 * MiB)
    config = ModelConfig(path="toy.gguf", context_length=1024, slots=1, device="cpu")
    assert estimate(repacking, config, has_gpu=False, total_memory=RAM).weights_bytes == 480 * MiB + 80 * MiB
    assert estimate(repacking, config, has_gpu=False, total_memory=RAM).repacked_bytes == 80 * MiB
    half = dataclasses.replace(config, gpu_layers=2, device="cuda:0")
    assert estimate(repacking, half, has_gpu=False, total_memory=RAM).weights_bytes == 480 * MiB + 40 * MiB
    assert estimate(repacking, dataclasses.replace(half, gpu_layers=-1), has_gpu=False, total_memory=RAM).weights_bytes == 480 * MiB
    assert estimate(TOY_GGUF, config, has_gpu=False, total_memory=RAM).weights_bytes == 480 * MiB


def test_a_vision_projector_beside_the_model_counts_with_the_weights(tmp_path: Path) -> None:
    model = tmp_path / "toy.gguf"
    config = ModelConfig(path=str(model), context_length=1024, slots=1, device="cpu")
    plain = estimate(TOY_GGUF, config, has_gpu=False, total_memory=RAM)
    with open(tmp_path / "mmproj-toy-F16.gguf", "wb") as projector:
        projector.truncate(7 * MiB)
    seeing = estimate(TOY_GGUF, config, has_gpu=False, total_memory=RAM)
    assert seeing.weights_bytes - plain.weights_bytes == 7 * MiB and seeing.gpu_bytes == 0
    gpu = dataclasses.replace(config, device="cuda:0")
    assert (estimate(TOY_GGUF, gpu, has_gpu=True, total_memory=RAM).gpu_bytes
            - estimate(TOY_GGUF, dataclasses.replace(gpu, mmproj=str(tmp_path / "gone.gguf")), has_gpu=True,
                       total_memory=RAM).gpu_bytes) == 7 * MiB


def test_changing_context_slots_or_kv_type_changes_the_estimate() -> None:
    base = ModelConfig(path="toy.gguf", context_length=4096, slots=4)
    totals = {estimate(TOY_GGUF, dataclasses.replace(base, **change), has_gpu=False, total_memory=RAM).total_bytes
              for change in ({}, {"context_length": 2048}, {"slots": 2}, {"kv_cache_type": "q8_0"})}
    assert len(totals) == 4


def test_without_flash_attention_one_chats_attention_scores_are_counted_as_auto_runs_it() -> None:
    """On the CPU with an f16 cache "auto" runs without flash attention (catalog/flash_rule.py, the
    runner's rule too), so a long prompt's micro-batch keeps its scores over its own chat's stream:
    512 tokens x 4,096 cells x 8 heads x 4 bytes, once however many chats there are."""
    def overhead(**change: object) -> int:
        config = dataclasses.replace(ModelConfig(path="toy.gguf", context_length=4096, slots=4, device="cpu"),
                                     **change)
        return estimate(TOY_GGUF, config, has_gpu=False, total_memory=RAM).overhead_bytes

    scores = 512 * 4096 * 8 * 4
    assert overhead() == overhead(flash_attention="off") == overhead(flash_attention="on") + scores
    assert overhead(slots=8) - overhead(slots=8, flash_attention="on") == scores  # one chat's stream, not all
    assert overhead(kv_cache_type="q8_0") == overhead(kv_cache_type="q8_0", flash_attention="on")  # auto: on
    on_gpu = ModelConfig(path="toy.gguf", context_length=4096, slots=4, device="auto", gpu_layers=-1)
    gpu = estimate(TOY_GGUF, on_gpu, has_gpu=True, total_memory=RAM).gpu_bytes
    assert gpu == estimate(TOY_GGUF, dataclasses.replace(on_gpu, flash_attention="on"), has_gpu=True,
                           total_memory=RAM).gpu_bytes  # on a GPU llama.cpp chooses: its fast kernel


def test_hf_weights_by_hand_for_each_quantization() -> None:
    def weights(**change: object) -> int:
        config = dataclasses.replace(ModelConfig(path="toy", backend="hf", context_length=256, slots=1), **change)
        return estimate(TOY_HF, config, has_gpu=False, total_memory=RAM).weights_bytes

    # "auto" is what the HF runner picks: float32 on the CPU, bf16 on a GPU
    assert weights() == 1_000_000 * 4
    assert weights(device="cuda:0") == 1_000_000 * 2
    assert weights(dtype="float16") == 1_000_000 * 2
    # 800k quantizable weights; 200k (embeddings, norms, lm_head) stay in the compute dtype
    assert weights(quantization="int8", dtype="bfloat16") == 800_000 + 200_000 * 2
    assert weights(quantization="nf4", dtype="bfloat16") == int(800_000 * (0.5 + 4 / 64)) + 200_000 * 2 == 850_000
    assert weights(quantization="fp4", double_quant=True, dtype="bfloat16") == \
        int(800_000 * (0.5 + 1 / 64 + 4 / 16384)) + 400_000
    kv = estimate(TOY_HF, ModelConfig(path="toy", backend="hf", context_length=256, slots=3), has_gpu=False, total_memory=RAM)
    assert kv.kv_cache_bytes == 2 * 4 * 2 * 128 * 256 * 3 * 4
    # on a GPU the fast decode adds one spare slot row (bf16 there), unless it is off
    on_gpu = ModelConfig(path="toy", backend="hf", context_length=256, slots=3)
    assert estimate(TOY_HF, on_gpu, has_gpu=True, total_memory=RAM).kv_cache_bytes == 2 * 4 * 2 * 128 * 256 * 4 * 2
    off = dataclasses.replace(on_gpu, fast_decode="off")
    assert estimate(TOY_HF, off, has_gpu=True, total_memory=RAM).kv_cache_bytes == 2 * 4 * 2 * 128 * 256 * 3 * 2


def test_verdict_levels_and_suggestions() -> None:
    result = estimate(TOY_GGUF, ModelConfig(path="toy.gguf", context_length=32768, slots=4, prompt_copy="off",
                                            flash_attention="on"), has_gpu=False, total_memory=RAM)
    need = result.total_bytes
    assert verdict(result, free_bytes=4 * need, total_bytes=8 * need).level == "fits"
    assert verdict(result, free_bytes=4 * need, total_bytes=8 * need).suggestion == ""
    tight = verdict(result, free_bytes=need + MiB, total_bytes=int(need * 1.2))
    assert tight.level == "tight" and "context" in tight.suggestion
    free = int(need * 0.75)
    too_big = verdict(result, free_bytes=free, total_bytes=need)
    assert too_big.level == "does not fit" and too_big.suggestion.startswith("Lower the context to ")
    # the suggested context really fits, and the step above it would not
    suggested = int(too_big.suggestion.split("to ")[1].split(" tokens")[0].replace(",", ""))
    assert suggested % 256 == 0 and 8192 < suggested < 16384
    assert estimate(TOY_GGUF, dataclasses.replace(result.config, context_length=suggested), has_gpu=False, total_memory=RAM).total_bytes <= free
    assert estimate(TOY_GGUF, dataclasses.replace(result.config, context_length=suggested + 256), has_gpu=False, total_memory=RAM).total_bytes > free


def test_the_prompt_reading_copy_is_counted_where_llama_cpp_would_make_it() -> None:
    config = ModelConfig(path="toy.gguf", context_length=4096, slots=4, gpu_layers=0, device="cpu")
    small = dataclasses.replace(TOY_GGUF, n_params=200_000_000)  # its F32 copy: 800 MB, under auto's 1 GiB
    plain = estimate(small, dataclasses.replace(config, prompt_copy="off"), has_gpu=False, total_memory=RAM)
    # auto on a machine with 64 GiB: F32 weights (4 bytes x 2 x 10^8), one chat's cache, one micro-batch's activations
    counted = estimate(small, config, total_memory=64 << 30, has_gpu=False)
    activations = 512 * 1024 * 4 * 17
    assert counted.prompt_copy_bytes == 4 * 200_000_000 + plain.kv_cache_bytes // 4 + activations
    assert counted.total_bytes == plain.total_bytes + counted.prompt_copy_bytes
    # auto on 4 GiB: the 800 MB copy is more than an eighth, so llama.cpp reads prompts without it
    assert estimate(small, config, total_memory=4 << 30, has_gpu=False).prompt_copy_bytes == 0
    assert estimate(small, dataclasses.replace(config, prompt_copy="on"), total_memory=4 << 30, has_gpu=False).prompt_copy_bytes > 0
    assert estimate(small, dataclasses.replace(config, device="auto", gpu_layers=-1), has_gpu=True,
                    total_memory=64 << 30).prompt_copy_bytes == 0
    unquantized = dataclasses.replace(small, quantization="F16")
    assert estimate(unquantized, config, total_memory=64 << 30, has_gpu=False).prompt_copy_bytes == 0
    # where memory is short, leaving the copy out is the first thing to try
    assert suggest(counted, plain.total_bytes + MiB).startswith("Turn the prompt reading copy off")

def test_suggestions_beyond_context() -> None:
    weights_only = estimate(TOY_GGUF, ModelConfig(path="toy.gguf", context_length=512, slots=1), has_gpu=False, total_memory=RAM)
    assert suggest(weights_only, weights_only.total_bytes // 10).startswith("Choose a smaller model")
    on_gpu = estimate(TOY_GGUF, ModelConfig(path="toy.gguf", context_length=512, slots=1, device="cuda:0"), has_gpu=False, total_memory=RAM)
    # leaving one layer on the CPU frees it (100 MiB) and the output head with its logits (50 + 62.5 MiB)
    assert suggest(on_gpu, on_gpu.gpu_bytes - 150 * MiB).startswith("Put 3 of 4 layers on the GPU")
    assert suggest(on_gpu, on_gpu.gpu_bytes - 250 * MiB).startswith("Put 2 of 4 layers on the GPU")
    billion = dataclasses.replace(TOY_HF, n_params=10**9, unquantized_params=10**8)  # weights outweigh the runtime
    hf = estimate(billion, ModelConfig(path="toy", backend="hf", context_length=256, slots=1), has_gpu=False, total_memory=RAM)
    assert suggest(hf, int(hf.total_bytes * 0.8)) == "Load it in 4-bit (NF4)."


def test_hf_overhead_by_hand() -> None:
    config = ModelConfig(path="toy", backend="hf", context_length=256, slots=2, device="cpu")
    result = estimate(TOY_HF, config, has_gpu=False, total_memory=RAM)
    # runtime 58 MiB + 32,000-token tokenizer x 307 bytes; a 512-token step over 512 keys: 17 floats per
    # embedding dimension per token, and the mask with three float copies per (token, key) pair
    transient = 512 * 1024 * 4 * 17 + 512 * 512 * (1 + 3 * 4)
    assert result.transient_bytes == transient
    assert result.overhead_bytes == 58 * MiB + 32000 * 307 + transient
    assert estimate(TOY_HF, dataclasses.replace(config, quantization="int8"), has_gpu=False, total_memory=RAM).overhead_bytes == \
        result.overhead_bytes + 20 * MiB  # bitsandbytes' own kernels and int8 state
    on_gpu = estimate(TOY_HF, dataclasses.replace(config, device="cuda:0"), has_gpu=False, total_memory=RAM)
    tensors = on_gpu.weights_bytes + on_gpu.kv_cache_bytes
    assert on_gpu.gpu_bytes == tensors + 512 * 1024 * 2 * 17 + 512 * 512 * 7 + 400 * MiB + int(0.1 * tensors)
    assert "grow as the chats do" in result.kv_explanation() and "grow" not in on_gpu.kv_explanation()


MEASURE = """
import json, sys
import psutil
from engine.protocol import ModelConfig, SamplingParams
from engine.runners import load_runner
from engine.runners.base import SlotWork
process = psutil.Process()
import llama_cpp, engine.runners.llamacpp.runner  # libraries loaded before the baseline: they are not the model
before = process.memory_info().rss
runner = load_runner(ModelConfig(path=sys.argv[1]), lambda fraction, message: None, lambda: False)
loaded = process.memory_info().rss
for slot in range(runner.slots):
    runner.begin_turn(slot, SamplingParams(temperature=0.0))
# a full batch of prompt in one chat, then decode steps in all chats: every buffer a turn uses is touched
runner.forward([SlotWork(0, [100 + i % 900 for i in range(runner.batch_tokens)], 0, True)])
for step in range(3):
    runner.forward([SlotWork(s, [200 + s], (runner.batch_tokens if s == 0 else 0) + step, True)
                    for s in range(runner.slots)])
used = process.memory_info().rss
runner.close()
print(json.dumps({"after_load": loaded - before, "after_steps": used - before}))
"""


RSS_BAND = 0.20  # 2x the 10% this machine kept to: another CPU repacks and pages in differently
AFTER_LOAD_BAND = 0.10  # nothing a step touches yet: the parts are the exact ones of the test below, plus the runtime
BUFFER = re.compile(r"(?:model buffer size|llama_kv_cache: size) =\s+([0-9.]+) MiB")


def _buffers(lines: list[str]) -> list[tuple[str, float]]:
    """llama.cpp's own sizes of what it allocated, in the order it logged them (one context after another)."""
    return [("kv" if "kv_cache" in line else "weights", float(match.group(1)))
            for line in lines if (match := BUFFER.search(line))]


def test_the_estimate_has_llama_cpps_own_buffer_sizes(default_model: str) -> None:
    """The parts llama.cpp reports exactly (weights, repacked or mapped; KV cache; the prompt copy's) are
    the estimate's to the byte, give or take the log's two decimals: deterministic on every CPU."""
    from engine.runners.llamacpp.load import llama_log
    from engine.runners.llamacpp.runner import LlamaCppRunner

    config = ModelConfig(path=default_model, prompt_copy="on")
    mark = llama_log().mark()
    runner = LlamaCppRunner.load(config, lambda fraction, message: None, lambda: False)
    try:
        logged, info = _buffers(llama_log().since(mark)), runner.info
    finally:
        runner.close()
    result = estimate_here(describe(default_model), config, has_gpu=False)
    kv_at = [index for index, (kind, _) in enumerate(logged) if kind == "kv"]
    assert len(kv_at) == 2, logged  # the generating context, then the prompt copy's
    generating, copy = logged[: kv_at[0] + 1], logged[kv_at[0] + 1 : kv_at[1] + 1]
    weights = sum(size for kind, size in generating if kind == "weights")
    assert result.weights_bytes / MiB == pytest.approx(weights, abs=0.02) and weights > 80
    assert result.kv_cache_bytes / MiB == pytest.approx(generating[-1][1], abs=0.01) == info.kv_cache_bytes / MiB
    copy_buffers = sum(size for _, size in copy)  # its F32 weights and its one chat's cache
    assert copy_buffers * MiB <= result.prompt_copy_bytes <= copy_buffers * MiB + result.overhead_bytes
    assert info.prompt_copy_bytes / MiB == pytest.approx(copy_buffers, abs=0.05)  # what Model details shows


@pytest.mark.slow
def test_estimate_is_near_the_measured_rss(default_model: str) -> None:
    """Bytes, not time: the process's resident memory growth when the engine loads the default model.

    RSS counts what the allocator and the kernel decide (which pages of the mapped file and of the
    compute buffers were touched), so the band is wide; the exact parts are the test above's."""
    root = Path(__file__).resolve().parents[3]
    run = subprocess.run([sys.executable, "-c", MEASURE, default_model], cwd=root, capture_output=True,
                         text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    measured = json.loads(run.stdout.strip().splitlines()[-1])
    result: Estimate = estimate_here(describe(default_model), ModelConfig(path=default_model), has_gpu=False)
    print(f"estimated {result.after_load_bytes:,} bytes after load, {result.total_bytes:,} full; measured {measured}")
    assert abs(result.total_bytes - measured["after_steps"]) <= RSS_BAND * measured["after_steps"]
    # right after load: the KV cache cleared, the compute buffer not touched yet (this machine: within 1%)
    assert abs(result.after_load_bytes - measured["after_load"]) <= AFTER_LOAD_BAND * measured["after_load"]


def test_auto_leaves_the_copy_off_for_a_1b_model_even_with_memory_to_spare() -> None:
    """The copy was measured to pay for the bundled 135M model only: a 4 GB copy of a 1B model is not taken
    by "auto", however much RAM there is; "on" still takes it; the estimate counts exactly what the runner takes."""
    one_b, gigabytes = 1_070_000_000, 1 << 30
    auto, on = (ModelConfig(path="m.gguf", prompt_copy=choice) for choice in ("auto", "on"))  # type: ignore[arg-type]
    use, why = prompt_copy_wanted(auto, False, "Q4_K_M", one_b, 256 * gigabytes)
    assert use is False and why.startswith("at the usual speed: a faster F32 copy of this model would take 4.0 GiB")
    assert "only up to 1.0 GiB (Settings: Prompt reading copy: on)" in why
    assert prompt_copy_wanted(on, False, "Q4_K_M", one_b, 256 * gigabytes) == (True, "")
    assert prompt_copy_wanted(auto, False, "Q4_1", 250_000_000, 256 * gigabytes)[0] is True  # 1.0e9 bytes: under 1 GiB
    model = dataclasses.replace(TOY_GGUF, n_params=one_b, quantization="Q4_K_M")
    config = ModelConfig(path="m.gguf", device="cpu")
    assert estimate(model, config, has_gpu=False, total_memory=256 * gigabytes).prompt_copy_bytes == 0
    assert estimate(model, dataclasses.replace(config, prompt_copy="on"), has_gpu=False,
                    total_memory=256 * gigabytes).prompt_copy_bytes > 4 * one_b


def test_auto_leaves_the_copy_off_with_another_llama_cpp_python(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.catalog import prompt_copy_rule
    from engine.tuning import PROMPT_COPY_LLAMA_CPP_VERSION

    auto = ModelConfig(path="m.gguf")
    monkeypatch.setattr(prompt_copy_rule, "_llama_cpp_version", lambda: "0.3.99")
    use, why = prompt_copy_wanted(auto, False, "Q4_1", 135_000_000, 64 << 30)
    assert use is False and "0.3.99" in why and PROMPT_COPY_LLAMA_CPP_VERSION in why
    monkeypatch.setattr(prompt_copy_rule, "_llama_cpp_version", lambda: PROMPT_COPY_LLAMA_CPP_VERSION)
    assert prompt_copy_wanted(auto, False, "Q4_1", 135_000_000, 64 << 30) == (True, "")
