"""The transformers runner on a tiny Llama built in code: batching, cache reuse, sampling, bitsandbytes."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from engine.protocol import ChatMessage, ModelConfig, SamplingParams  # noqa: E402
from engine.runners.base import CacheFull, LoadCancelled, SlotWork  # noqa: E402
from engine.runners.hf.runner import GREEDY, HfRunner  # noqa: E402
from tests.engine.runners.hf.tiny_hf import (  # noqa: E402
    answer_alone,
    drive,
    fresh,
    prompt,
    reference_varlen_attention,
)

pytestmark = pytest.mark.hf

QUESTIONS = ["Hello!", "What is the capital of France?", "Tell me about cats and dogs.", "Once upon a time"]


@pytest.fixture(scope="module")
def runner(tiny_model: str) -> HfRunner:
    config = ModelConfig(path=tiny_model, backend="hf", slots=4, context_length=256, batch_tokens=64)
    loaded = HfRunner.load(config, lambda fraction, message: None, lambda: False)
    yield loaded
    loaded.close()


def test_the_model_is_named_by_its_folder(runner: HfRunner, tiny_model: str) -> None:
    assert runner.info.name == Path(tiny_model).name and runner.info.path == tiny_model


def test_four_chats_batched_equal_each_chat_alone_and_generate(runner: HfRunner) -> None:
    prompts = {slot: prompt(runner, question) for slot, question in enumerate(QUESTIONS)}
    fresh(runner, 0, 1, 2, 3)
    # Staggered starts and 5-token chunks: most steps mix prompt chunks with decode tokens.
    batched = drive(runner, prompts, 16, chunk=5, delays={0: 0, 1: 2, 2: 5, 3: 9})
    for slot, tokens in prompts.items():
        fresh(runner, 0)
        alone = drive(runner, {0: tokens}, 16)[0]
        assert batched[slot] == alone, f"chat {slot}: batched output differs from its unbatched output"
        ids = torch.tensor([tokens])
        reference = runner.model.generate(ids, max_new_tokens=16, min_new_tokens=16, do_sample=False)
        assert alone == reference[0, len(tokens) :].tolist(), f"chat {slot}: differs from model.generate"


def test_second_turn_reuses_the_cache_and_matches_a_cold_run(runner: HfRunner) -> None:
    fresh(runner, 1)
    first = prompt(runner, "Hello!")
    answer = drive(runner, {1: first}, 8)[1]
    cached = first + answer[:-1]  # the last sampled token was never fed
    reply = runner.tokenizer.decode(answer, skip_special_tokens=True)
    second = prompt(runner, "Hello!", reply, "Tell me about the weather.")
    common = next((i for i, (a, b) in enumerate(zip(cached, second)) if a != b), min(len(cached), len(second)))
    assert len(first) <= common < len(second)
    assert runner.remove_from(1, common)
    runner.begin_turn(1, GREEDY)
    warm = drive(runner, {1: second[common:]}, 12, start={1: common})[1]
    fresh(runner, 1)
    cold = drive(runner, {1: second}, 12)[1]
    assert warm == cold


def test_remove_from_then_regenerate_gives_the_same_answer(runner: HfRunner) -> None:
    fresh(runner, 2)
    tokens = prompt(runner, "Once upon a time")
    before = drive(runner, {2: tokens}, 10)[2]
    runner.remove_from(2, len(tokens) - 3)  # an edit near the end of the prompt
    runner.begin_turn(2, GREEDY)
    again = drive(runner, {2: tokens[-3:]}, 10, start={2: len(tokens) - 3})[2]
    assert again == before


def test_seeded_sampling_repeats_per_slot_and_top_k_1_is_greedy(runner: HfRunner) -> None:
    tokens = prompt(runner, "Tell me about cats and dogs.")
    wide = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0, seed=7)
    fresh(runner, 0, 1, params=wide)
    fresh(runner, 2, params=SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=8))
    fresh(runner, 3, params=SamplingParams(temperature=0.8, top_k=1, repeat_penalty=1.0, seed=1))
    out = drive(runner, {0: tokens, 1: tokens, 2: tokens, 3: tokens}, 16, delays={1: 3})
    assert out[0] == out[1], "the same seed must give the same tokens, whatever runs beside it"
    assert out[0] != out[2]
    fresh(runner, 0)
    assert out[3] == drive(runner, {0: tokens}, 16)[0]


def test_repeat_penalty_keeps_recent_tokens_out_of_a_greedy_answer(runner: HfRunner) -> None:
    tokens = prompt(runner, "Hello!")
    fresh(runner, 0, params=SamplingParams(temperature=0.0, repeat_penalty=1e9))
    out = drive(runner, {0: tokens}, 12)[0]
    seen = list(tokens)
    for token in out:
        assert token not in seen[-64:], "a penalised token came back"
        seen.append(token)


def test_top_p_and_min_p_narrow_to_the_best_token(runner: HfRunner) -> None:
    tokens = prompt(runner, "Hello!")
    fresh(runner, 0, params=SamplingParams(temperature=5.0, top_k=0, top_p=1e-6, min_p=0.0, seed=3, repeat_penalty=1))
    fresh(runner, 1, params=SamplingParams(temperature=5.0, top_k=0, top_p=1.0, min_p=0.999, seed=4, repeat_penalty=1))
    out = drive(runner, {0: tokens, 1: tokens}, 10)
    fresh(runner, 2)
    greedy = drive(runner, {2: tokens}, 10)[2]
    assert out[0] == greedy and out[1] == greedy


def test_text_template_detokenizer_and_end_of_generation(runner: HfRunner) -> None:
    text = runner.render_chat([ChatMessage("system", "Be brief."), ChatMessage("user", "Hello!")])
    assert text == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n"
    sentence = "Hello! How are you today? Numbers: 10 11 12."
    detokenizer = runner.detokenizer()
    pieces = [detokenizer.add(token) for token in runner.tokenize(sentence)]
    assert "".join(pieces) + detokenizer.flush() == sentence
    eos = runner.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert runner.is_end_of_generation(eos)
    assert not runner.is_end_of_generation(runner.tokenize("Hello")[0])


def test_model_info_reports_what_is_in_effect(runner: HfRunner) -> None:
    info = runner.info
    assert (info.backend, info.device, info.quantization, info.attention) == ("hf", "cpu", "fp32", "SDPA (math, auto)")
    assert info.model_bytes == runner.model.get_memory_footprint() > 0
    assert info.slots == 4 and info.context_length == 256 and info.trained_context_length == 512
    assert info.n_params == runner.model.num_parameters()
    assert runner.kv_cache_bytes() >= info.kv_cache_bytes > 0


def test_a_step_past_the_context_raises_cache_full_and_the_slot_stays_usable(runner: HfRunner) -> None:
    fresh(runner, 3)
    filler = (prompt(runner, "Numbers: 0 1 2 3 4 5 6 7 8 9 10 11 12.") * 20)[:250]
    runner.forward([SlotWork(3, filler, 0, sample=False)])
    with pytest.raises(CacheFull, match="context of 256"):
        runner.forward([SlotWork(3, filler[:10], 250, sample=True)])
    assert runner.remove_from(3, 200)
    token = runner.forward([SlotWork(3, filler[200:210], 200, sample=True)])[3][0]
    assert 0 <= token < len(runner.tokenizer)


def test_loading_reports_progress_and_can_be_cancelled(tiny_model: str) -> None:
    seen: list[tuple[float, str]] = []
    config = ModelConfig(path=tiny_model, backend="hf", slots=1, context_length=64)
    HfRunner.load(config, lambda fraction, message: seen.append((fraction, message)), lambda: False).close()
    fractions = [fraction for fraction, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and seen[-1][1] == "ready"
    assert any(message.startswith("loading weights ") for _, message in seen)
    messages: list[str] = []
    with pytest.raises(LoadCancelled):
        HfRunner.load(
            config,
            lambda fraction, message: messages.append(message),
            lambda: any(m.startswith("loading weights ") for m in messages),
        )


@pytest.fixture(scope="module")
def fp32_footprint(runner: HfRunner) -> int:
    return runner.info.model_bytes


@pytest.mark.parametrize("mode", ["int8", "nf4"])
def test_bitsandbytes_on_the_cpu_loads_generates_and_is_smaller(tiny_model: str, mode: str, fp32_footprint: int) -> None:
    config = ModelConfig(path=tiny_model, backend="hf", slots=2, context_length=128, quantization=mode,
                         double_quant=mode == "nf4")
    quantized = HfRunner.load(config, lambda fraction, message: None, lambda: False)
    try:
        assert quantized.info.quantization.startswith(mode)
        assert 0 < quantized.info.model_bytes < fp32_footprint
        fresh(quantized, 0, 1)
        tokens = prompt(quantized, "Hello!")
        out = drive(quantized, {0: tokens, 1: prompt(quantized, "Once upon a time")}, 8)
        assert all(len(o) == 8 and all(0 <= t < len(quantized.tokenizer) for t in o) for o in out.values())
        # A quantized model still follows its own greedy path on one chat.
        fresh(quantized, 0)
        assert drive(quantized, {0: tokens}, 8)[0] == out[0]
    finally:
        quantized.close()


def test_two_chats_through_the_engine_loop_reuse_cancel_and_stop(tiny_model: str, runner: HfRunner) -> None:
    from engine.protocol import Cancel, LoadModel, ModelLoaded, Submit, Token
    from tests.engine.engine_harness import EngineHarness

    greedy = SamplingParams(temperature=0, max_new_tokens=12)  # with the default repeat penalty
    first = {"a": (ChatMessage("user", "Hello!"),), "b": (ChatMessage("user", "Once upon a time"),)}
    expected = {chat: answer_alone(runner, runner.tokenize(runner.render_chat(m)), greedy) for chat, m in first.items()}
    harness = EngineHarness()
    try:
        harness.loop.send(LoadModel(ModelConfig(path=tiny_model, backend="hf", slots=2, context_length=256)))
        assert isinstance(harness.wait_loaded(), ModelLoaded)
        mark = harness.mark()
        for chat, messages in first.items():
            harness.loop.send(Submit(chat, messages, greedy))
        for chat in first:
            finished = harness.finished(chat, mark)
            assert finished.text == expected[chat] and finished.reason in ("stop", "length")
        # Second turn of chat a: only the new tokens are computed, the answer is the cold one.
        second = (*first["a"], ChatMessage("assistant", expected["a"]), ChatMessage("user", "And the weather?"))
        second_prompt = runner.tokenize(runner.render_chat(second))
        mark = harness.mark()
        harness.loop.send(Submit("a", second, greedy))
        started = harness.started("a", mark)
        assert len(runner.tokenize(runner.render_chat(first["a"]))) <= started.reused_tokens < len(second_prompt)
        assert harness.finished("a", mark).text == answer_alone(runner, second_prompt, greedy)
        # A stop string cuts the answer before it; cancel ends a long turn early.
        stop = expected["b"][4:7]
        mark = harness.mark()
        harness.loop.send(Submit("b", first["b"], SamplingParams(temperature=0, max_new_tokens=12, stop=(stop,))))
        finished = harness.finished("b", mark)
        assert finished.reason == "stop" and finished.text == expected["b"][: expected["b"].index(stop)]
        mark = harness.mark()
        harness.loop.send(Submit("c", first["a"], SamplingParams(temperature=0, max_new_tokens=200, ignore_eos=True)))
        harness.wait_for(lambda e: isinstance(e, Token) and e.chat_id == "c", after=mark)
        harness.loop.send(Cancel("c"))
        cancelled = harness.finished("c", mark)
        assert cancelled.reason == "cancelled" and cancelled.stats.generated_tokens < 200
    finally:
        harness.close()


# ---------------------------------------------------------------- the real default model, through transformers

PARAGRAPH = (
    "The river runs through the old town, past the market and the church, before it reaches the sea. "
    "In summer, children swim near the bridge while their parents sit in the shade and talk about the weather."
)


GGUF_PROGRESS: list[tuple[float, str]] = []


@pytest.fixture(scope="module")
def gguf_runner(default_model: str) -> HfRunner:
    # By a path relative to the working directory, as `--model .venv/lib/.../x.gguf` gives it.
    model = Path(default_model)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(model.parent.parent)
        config = ModelConfig(path=f"{model.parent.name}/{model.name}", backend="hf", slots=2, context_length=512)
        progress = lambda fraction, message: GGUF_PROGRESS.append((fraction, message))  # noqa: E731
        loaded = HfRunner.load(config, progress, lambda: False)
    yield loaded
    loaded.close()


def perplexity(logprobs: Sequence[float]) -> float:
    import math

    return math.exp(-sum(logprobs) / len(logprobs))


LLAMACPP_LOGPROBS = """
import ctypes, json, sys
import numpy as np
import llama_cpp
path, text, tokens = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
quiet = llama_cpp.llama_log_callback(lambda *args: None)
llama_cpp.llama_log_set(quiet, None)
llama_cpp.llama_backend_init()
model_params = llama_cpp.llama_model_default_params()
model_params.use_extra_bufts = False  # AMX kernels fault on some VMs (see engine/runners/llamacpp/load.py)
model = llama_cpp.llama_model_load_from_file(path.encode(), model_params)
vocab = llama_cpp.llama_model_get_vocab(model)
context_params = llama_cpp.llama_context_default_params()
context_params.n_ctx, context_params.n_batch, context_params.n_threads = 256, 256, 2
ctx = llama_cpp.llama_init_from_model(model, context_params)
buffer = (llama_cpp.llama_token * 512)()
count = llama_cpp.llama_tokenize(vocab, text.encode(), len(text.encode()), buffer, 512, False, False)
same = list(buffer[:count]) == tokens
batch = llama_cpp.llama_batch_init(len(tokens), 0, 1)
for i, token in enumerate(tokens):
    batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = token, i, 1, True
    batch.seq_id[i][0] = 0
batch.n_tokens = len(tokens)
assert llama_cpp.llama_decode(ctx, batch) == 0
n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
rows = [np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, i), shape=(n_vocab,)).astype(np.float64)
        for i in range(len(tokens) - 1)]
logits = np.stack(rows)
logits -= logits.max(axis=1, keepdims=True)
logsoftmax = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
print(json.dumps({"same": same, "logprobs": [logsoftmax[i, tokens[i + 1]] for i in range(len(tokens) - 1)]}))
"""


def llamacpp_logprobs(model_path: str, tokens: list[int]) -> list[float]:
    """llama.cpp's log-probabilities of the same tokens, in a child process.

    A child keeps llama.cpp's and torch's thread pools apart, and a crash of
    the native library fails this test instead of the whole session.
    """
    import json
    import subprocess
    import sys

    pytest.importorskip("llama_cpp")
    command = [sys.executable, "-c", LLAMACPP_LOGPROBS, model_path, PARAGRAPH, json.dumps(tokens)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if done.returncode == -4:  # SIGILL
        pytest.fail("llama.cpp crashed with an illegal instruction: its build does not match this CPU")
    assert done.returncode == 0, f"llama.cpp failed (exit {done.returncode}): {done.stderr[-500:]}"
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["same"], "llama.cpp tokenizes the paragraph differently"
    return result["logprobs"]


@pytest.mark.slow
def test_default_gguf_through_transformers_loads_dequantized_and_answers(gguf_runner: HfRunner) -> None:
    question = "What is the capital of France?"
    tokens = gguf_runner.tokenize(gguf_runner.render_chat([ChatMessage("user", question)]))
    assert gguf_runner.info.quantization == "fp32" and gguf_runner.info.n_params > 100_000_000
    fractions = [fraction for fraction, _ in GGUF_PROGRESS]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any(message.startswith("dequantizing GGUF tensors ") for _, message in GGUF_PROGRESS)
    answer = answer_alone(gguf_runner, tokens, SamplingParams(temperature=0, repeat_penalty=1.0, max_new_tokens=24))
    # that it is the same model is test_perplexity_matches_llamacpp_on_the_same_gguf's (teacher-forced) work
    assert answer.strip()


@pytest.mark.slow
def test_perplexity_matches_llamacpp_on_the_same_gguf(gguf_runner: HfRunner, default_model: str) -> None:
    tokens = gguf_runner.tokenize(PARAGRAPH)
    assert 35 <= len(tokens) <= 80
    ours = perplexity(gguf_runner.token_logprobs(tokens))
    theirs = perplexity(llamacpp_logprobs(default_model, tokens))
    assert 1.0 < ours < 1000.0
    assert abs(ours - theirs) / theirs < 0.05, f"transformers {ours:.2f} vs llama.cpp {theirs:.2f}"


def test_flash_attention_packing_matches_sdpa(runner: HfRunner, tiny_model: str) -> None:
    """The flash-attn path's cu_seqlens and packed keys, checked on the CPU with a reference kernel."""
    from transformers import AttentionInterface

    AttentionInterface.register("hearth_varlen_reference", reference_varlen_attention)
    config = ModelConfig(path=tiny_model, backend="hf", slots=4, context_length=256)
    varlen = HfRunner.load(config, lambda fraction, message: None, lambda: False)
    try:
        varlen.model.set_attn_implementation("hearth_varlen_reference")
        varlen._varlen = True
        prompts = {slot: prompt(varlen, question) for slot, question in enumerate(QUESTIONS)}
        fresh(varlen, 0, 1, 2, 3)
        packed = drive(varlen, prompts, 10, chunk=7, delays={1: 1, 2: 3, 3: 4})
        fresh(runner, 0, 1, 2, 3)
        assert packed == drive(runner, prompts, 10, chunk=7, delays={1: 1, 2: 3, 3: 4})
    finally:
        varlen.close()


def test_baselines_for_the_bench_count_real_tokens(runner: HfRunner, tiny_model: str) -> None:
    from engine.bench.hf_baseline import generate_tokens_per_second, measure_baselines

    prompts = [prompt(runner, "Hello!"), prompt(runner, "Once upon a time")]
    single = generate_tokens_per_second(runner.model, prompts, 8, warmup=False)
    assert single.generated_tokens == 16 and single.tokens_per_second > 0
    chats = [(ChatMessage("user", "Hello!"),), (ChatMessage("user", "Once upon a time"),)]
    figures = measure_baselines(ModelConfig(path=tiny_model, backend="hf"), chats, 8)
    assert set(figures) == {"baseline_generate_tok_s", "baseline_generate_batch_tok_s"}
    assert all(value > 0 for value in figures.values())
