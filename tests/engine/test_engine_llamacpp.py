"""The real engine on the real default model: batching, cancel, reuse, bad input."""

from __future__ import annotations

import pytest

from engine.protocol import (
    Cancel,
    ChatError,
    ChatMessage,
    CloseChat,
    LoadModel,
    ModelConfig,
    ModelLoaded,
    ModelLoadFailed,
    SamplingParams,
    Submit,
)
from tests.engine.engine_harness import EngineHarness

pytestmark = pytest.mark.slow

# Every answer runs to its 24 tokens whatever the model would say: counts, not words, are asserted.
GREEDY = SamplingParams(temperature=0, max_new_tokens=24, ignore_eos=True)


def ask(text: str) -> tuple[ChatMessage, ...]:
    return (ChatMessage("user", text),)


@pytest.fixture(scope="module")
def engine(default_model: str):
    harness = EngineHarness()
    config = ModelConfig(path=default_model, context_length=1024, slots=4, threads=2)
    harness.loop.send(LoadModel(config))
    loaded = harness.wait_loaded()
    assert isinstance(loaded, ModelLoaded), loaded
    yield harness
    harness.close()


def test_model_info_describes_the_default_model(engine: EngineHarness) -> None:
    info = engine.loop.model_info
    assert info is not None
    assert info.backend == "llamacpp" and info.slots == 4 and info.context_length == 1024
    assert info.quantization == "Q4_1"
    assert info.device == "cpu" and not info.gpu_offload
    assert 50_000_000 < info.model_bytes < 150_000_000
    assert info.kv_cache_bytes > 0


def test_four_chats_finish_with_text_and_interleave(engine: EngineHarness) -> None:
    mark = engine.mark()
    questions = ["What is the capital of France?", "Name a fruit.", "Say hello.", "What color is the sky?"]
    for i, question in enumerate(questions):
        engine.loop.send(Submit(f"c{i}", ask(question), GREEDY))
    ends = [engine.finished(f"c{i}", mark) for i in range(4)]
    assert [(end.reason, end.stats.generated_tokens) for end in ends] == [("length", 24)] * 4
    # each chat's text is its own tokens, in order (nothing of another chat's stream)
    assert all(end.text == "".join(text for _, text in engine.tokens(f"c{i}", mark)) for i, end in enumerate(ends))
    # Interleaving: every chat got a token before any chat finished its turn.
    first_token_times = [engine.tokens(f"c{i}", mark)[0][0] for i in range(4)]
    last_token_times = [engine.tokens(f"c{i}", mark)[-1][0] for i in range(4)]
    assert max(first_token_times) < min(last_token_times)


def test_cancel_stops_within_a_step_and_frees_the_slot(engine: EngineHarness) -> None:
    mark = engine.mark()
    long_answer = SamplingParams(temperature=0, max_new_tokens=400, ignore_eos=True)
    engine.loop.send(Submit("long", ask("Write a long story about a dragon."), long_answer))
    engine.wait_for(lambda e: getattr(e, "chat_id", None) == "long" and type(e).__name__ == "Token", after=mark)
    engine.loop.send(Cancel("long"))
    end = engine.finished("long", mark)
    assert end.reason == "cancelled"
    assert end.stats.generated_tokens < 400
    tokens_after = [t for t, _ in engine.tokens("long", mark) if t > engine.events[-1][0]]
    assert tokens_after == []
    stats = engine.wait_for(lambda e: type(e).__name__ == "EngineStats" and e.slots_busy == 0, after=mark)
    assert stats.slots_total == 4


def test_second_turn_reuses_the_first_turns_tokens(engine: EngineHarness) -> None:
    mark = engine.mark()
    first = ask("Tell me a fact about cats.")
    engine.loop.send(Submit("reuse", first, GREEDY))
    end = engine.finished("reuse", mark)
    mark = engine.mark()
    second = first + (ChatMessage("assistant", end.text), ChatMessage("user", "And dogs?"))
    engine.loop.send(Submit("reuse", second, GREEDY))
    started = engine.started("reuse", mark)
    assert started.reused_tokens >= end.stats.prompt_tokens
    assert started.reused_tokens < started.prompt_tokens
    assert engine.finished("reuse", mark).stats.reused_tokens == started.reused_tokens


def test_a_sixth_chat_with_four_slots_is_served(engine: EngineHarness) -> None:
    mark = engine.mark()
    for i in range(6):
        engine.loop.send(Submit(f"six{i}", ask(f"Count to {i + 2}."), GREEDY))
    ends = [engine.finished(f"six{i}", mark) for i in range(6)]
    assert [(end.reason, end.stats.generated_tokens) for end in ends] == [("length", 24)] * 6


def test_prompt_longer_than_context_fails_only_that_chat(engine: EngineHarness) -> None:
    mark = engine.mark()
    engine.loop.send(Submit("ok", ask("Say hi."), GREEDY))
    engine.loop.send(Submit("huge", ask("word " * 3000), GREEDY))
    huge = engine.finished("huge", mark)
    assert huge.reason == "error" and "context" in huge.message and "1024" in huge.message
    assert engine.finished("ok", mark).reason in ("stop", "length")


def test_bad_files_fail_clearly_and_the_engine_stays_usable(tmp_path, default_model: str) -> None:
    harness = EngineHarness()
    try:
        text_file = tmp_path / "notes.gguf"
        text_file.write_text("this is not a model\n")
        for bad in (tmp_path / "missing.gguf", text_file):
            mark = harness.mark()
            harness.loop.send(LoadModel(ModelConfig(path=str(bad))))
            failed = harness.wait_loaded(after=mark)
            assert isinstance(failed, ModelLoadFailed)
            assert bad.name in failed.message
        mark = harness.mark()
        harness.loop.send(Submit("early", ask("hi"), GREEDY))
        error = harness.wait_for(lambda e: isinstance(e, ChatError), after=mark)
        assert "No model is loaded" in error.message
        harness.loop.send(LoadModel(ModelConfig(path=default_model, context_length=512, slots=2, threads=2)))
        assert isinstance(harness.wait_loaded(after=mark), ModelLoaded)
        answer_info = harness.loop.model_info
        harness.loop.send(Submit("after", ask("What is the capital of France?"), GREEDY))
        answer = harness.finished("after", mark)
        assert (answer.reason, answer.stats.generated_tokens) == ("length", 24)
        kept = harness.loop.pool.models[-1].runner
        mark = harness.mark()
        harness.loop.send(LoadModel(ModelConfig(path=str(text_file))))
        failed = harness.wait_loaded(after=mark)
        assert isinstance(failed, ModelLoadFailed) and failed.previous_kept
        # the very runner that answered before serves on (not a reload, not a half-loaded other file)
        harness.loop.send(CloseChat("after"))
        harness.loop.send(Submit("still", ask("What is the capital of France?"), GREEDY))
        still = harness.finished("still", mark)
        assert harness.loop.pool.models[-1].runner is kept and harness.loop.model_info == answer_info
        assert (still.reason, still.stats.generated_tokens, still.stats.reused_tokens) == ("length", 24, 0)
    finally:
        harness.close()


def test_an_answer_that_copies_its_prompt_is_drafted_and_the_stats_say_how_well(engine: EngineHarness) -> None:
    mark = engine.mark()
    code = "def area(width, height):\n    return width * height\n\n\ndef perimeter(width, height):\n    return 2 * (width + height)\n"
    engine.loop.send(Submit("copy", ask(f"Repeat this code exactly:\n\n```python\n{code}```"),
                            SamplingParams(temperature=0, repeat_penalty=1.0, max_new_tokens=60, speculative="auto")))
    end = engine.finished("copy", mark)
    assert end.stats.drafted_tokens > 0 and end.stats.acceptance is not None and end.stats.acceptance > 0.5
    # other chats' one-token guesses (drafts are on by default) may reach the gauge first: this turn's
    # drafts are the ones accepted
    stats = engine.wait_for(lambda e: type(e).__name__ == "EngineStats" and e.accepted_tokens > 0, after=mark)
    assert 0 < stats.accepted_tokens <= stats.drafted_tokens and stats.acceptance == pytest.approx(
        stats.accepted_tokens / stats.drafted_tokens)


def test_a_long_history_is_read_with_the_copy_while_another_chat_streams(engine: EngineHarness) -> None:
    from engine.bench.workloads import history

    info = engine.loop.model_info
    assert info is not None and info.prompt_reading.startswith("F32 copy")
    mark = engine.mark()
    engine.loop.send(Submit("streaming", ask("Write a long story about a lighthouse."),
                            SamplingParams(temperature=0, max_new_tokens=120, ignore_eos=True)))
    engine.wait_for(lambda e: getattr(e, "chat_id", None) == "streaming" and type(e).__name__ == "Token", after=mark)
    long = (*history(pairs=2, notes=11), ChatMessage("user", "What did the keeper find on day 3?"))
    submitted = engine.mark()
    engine.loop.send(Submit("long", long, GREEDY))
    end = engine.finished("long", mark)
    assert (end.reason, end.stats.generated_tokens) == ("length", 24) and end.stats.prompt_tokens > 600
    # the other chat kept streaming while the history was read (in chunks, one per step, beside its token)
    first_long = engine.tokens("long", mark)[0][0]
    streamed_meanwhile = [t for t, _ in engine.tokens("streaming", submitted) if t < first_long]
    assert len(streamed_meanwhile) >= 2
    assert engine.finished("streaming", mark).stats.generated_tokens == 120
    # both chats done, the engine idle: the long chat's slot holds its whole prompt from position 0 in the
    # generating context (moved over from the copy's, not left there)
    import llama_cpp

    runner = engine.loop.pool.models[-1].runner
    memory = llama_cpp.llama_get_memory(runner._context)  # type: ignore[union-attr]
    held = [(llama_cpp.llama_memory_seq_pos_min(memory, slot), llama_cpp.llama_memory_seq_pos_max(memory, slot))
            for slot in range(4)]
    assert any(low == 0 and high >= end.stats.prompt_tokens - 1 for low, high in held), held

    # the next turn finds the cells the copy computed in the generating context
    mark = engine.mark()
    engine.loop.send(Submit("long", (*long, ChatMessage("assistant", end.text), ChatMessage("user", "And day 4?")), GREEDY))
    started = engine.started("long", mark)
    assert started.reused_tokens >= end.stats.prompt_tokens
    again = engine.finished("long", mark)
    assert (again.reason, again.stats.generated_tokens) == ("length", 24)
