"""Q4_0 weights in ggml's repacked layout, also where AMX keeps llama.cpp's extra layouts off.

The default model is Q4_1, which ggml does not repack; llama.cpp's own quantizer turns it into
Q4_0 here (a few seconds, no network). The repacked layout must give the same next-token
distribution as the plain one, and it must really be in use (llama.cpp logs its buffer).
"""

from __future__ import annotations

from pathlib import Path

import llama_cpp
import numpy as np
import pytest

import engine.runners.llamacpp.load as load
from engine.catalog.models import describe
from engine.protocol import ChatMessage, ModelConfig, SamplingParams
from engine.runners.base import SlotWork
from engine.runners.llamacpp.load import llama_log
from engine.runners.llamacpp.repack import repackable_matrices
from engine.runners.llamacpp.runner import LlamaCppRunner

# Same weights, other kernels (8x8 blocks vs llamafile's tiles), other orders of f32 sums: the top-20
# log-probabilities moved by up to 0.19 here; a wrongly repacked matrix turns the answer into noise.
LAYOUT_NOISE = 0.5
FRANCE = (ChatMessage("user", "What is the capital of France?"),)


@pytest.fixture(scope="module")
def q4_0_model(default_model: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    target = tmp_path_factory.mktemp("q4_0") / "SmolLM2-135M-Instruct.Q4_0.gguf"
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0
    params.allow_requantize = True
    params.nthread = 1
    llama_log()  # llama.cpp's chatter goes to the ring buffer, not the test output
    assert llama_cpp.llama_model_quantize(default_model.encode(), str(target).encode(), params) == 0
    return str(target)


def _next_token_log_probabilities(path: str) -> tuple[np.ndarray, list[str]]:
    mark = llama_log().mark()
    runner = LlamaCppRunner.load(ModelConfig(path=path, slots=1, context_length=256, gpu_layers=0, threads=1),
                                 lambda fraction, message: None, lambda: False)
    try:
        logged = llama_log().since(mark)
        runner.begin_turn(0, SamplingParams(temperature=0, repeat_penalty=1.0))
        runner.forward([SlotWork(0, runner.tokenize(runner.render_chat(FRANCE)), 0, True)])
        logits = runner.last_logits(0).astype(np.float64)
    finally:
        runner.close()
    shifted = logits - logits.max()
    return shifted - np.log(np.exp(shifted).sum()), logged


def _repacked_mib(logged: list[str]) -> float:
    lines = [line for line in logged if "CPU_REPACK model buffer size" in line]
    return float(lines[-1].split("=")[1].split("MiB")[0]) if lines else 0.0


def test_only_the_layer_matrices_of_a_repackable_type_are_named(default_model: str, q4_0_model: str) -> None:
    names = repackable_matrices(Path(q4_0_model))
    # 30 layers x (q, k, v, output, gate, up, down); the Q8_0 token embedding is looked up by rows
    assert len(names) == 30 * 7 and "blk.0.attn_k.weight" in names and "blk.29.ffn_down.weight" in names
    assert not any(name.startswith("token_embd") for name in names)
    assert repackable_matrices(Path(default_model)) == []  # Q4_1 has no repacked layout


def test_q4_0_runs_repacked_and_answers_as_the_plain_layout_does(
    default_model: str, q4_0_model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    repacked, logged = _next_token_log_probabilities(q4_0_model)
    # the layer matrices (Q4_0: 18 bytes per 32 weights) went to the repacked buffer, and the memory
    # estimate counts that second copy
    assert 50 < _repacked_mib(logged) < 70
    assert abs(describe(q4_0_model).repacked_bytes / 2**20 - _repacked_mib(logged)) < 0.5
    assert describe(default_model).repacked_bytes == 0
    monkeypatch.setattr(load, "repacked_layout", lambda *args: None)
    monkeypatch.setattr(load, "extra_buffers_usable", lambda: False)
    plain, logged = _next_token_log_probabilities(q4_0_model)
    assert _repacked_mib(logged) == 0.0
    top = np.argsort(plain)[-20:]
    assert np.abs(repacked[top] - plain[top]).max() <= LAYOUT_NOISE
    assert int(np.argmax(repacked)) == int(np.argmax(plain))
    gap = np.sort(plain)[-1] - np.sort(plain)[-2]
    assert gap > 2 * LAYOUT_NOISE, f"the first token is a near-tie ({gap:.3f}): choose another prompt"
