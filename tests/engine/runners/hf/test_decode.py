"""The fast decode step (engine/runners/hf/decode.py) on the CPU: the code a CUDA graph records, run eagerly."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from engine.protocol import ModelConfig  # noqa: E402
from engine.runners.base import SlotWork  # noqa: E402
from engine.runners.hf import decode  # noqa: E402
from engine.runners.hf.runner import HfRunner  # noqa: E402
from tests.engine.runners.hf.tiny_hf import drive, fresh, prompt  # noqa: E402

pytestmark = pytest.mark.hf

QUESTIONS = ["Hello!", "What is the capital of France?", "Once upon a time"]


def load(tiny_model: str, fast_decode: str, slots: int = 4) -> HfRunner:
    config = ModelConfig(path=tiny_model, backend="hf", slots=slots, context_length=256, fast_decode=fast_decode)
    return HfRunner.load(config, lambda fraction, message: None, lambda: False)


@pytest.fixture(scope="module")
def static(tiny_model: str) -> HfRunner:
    runner = load(tiny_model, "on")
    yield runner
    runner.close()


@pytest.fixture(scope="module")
def packed(tiny_model: str) -> HfRunner:
    runner = load(tiny_model, "off")
    yield runner
    runner.close()


def count_static_steps(runner: HfRunner, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The row counts of the steps the static decoder served."""
    decoder = runner._decoder
    assert decoder is not None
    served: list[int] = []
    original = decoder.step

    def step(slots: list[int], tokens: list[int], positions: list[int]) -> torch.Tensor:
        served.append(len(slots))
        return original(slots, tokens, positions)

    monkeypatch.setattr(decoder, "step", step)
    return served


def test_static_decode_gives_the_packed_paths_greedy_tokens(
    static: HfRunner, packed: HfRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert static.info.decode == "static cache, eager (CUDA graphs need a GPU)"
    assert packed.info.decode == "eager"
    served = count_static_steps(static, monkeypatch)
    prompts = {slot: prompt(static, question) for slot, question in enumerate(QUESTIONS)}
    fresh(static, 0, 1, 2)
    fresh(packed, 0, 1, 2)
    # Staggered starts, 5-token chunks: prompt steps take the packed path, the rest the static one.
    ours = drive(static, prompts, 16, chunk=5, delays={1: 2, 2: 5})
    assert ours == drive(packed, prompts, 16, chunk=5, delays={1: 2, 2: 5})
    assert served.count(3) >= 8, "three chats decoding together went through the static step (bucket 4, one pad)"
    assert 1 in served and 2 in served


def test_padding_rows_never_touch_a_chat(static: HfRunner, packed: HfRunner) -> None:
    tokens = prompt(static, "Tell me about cats and dogs.")
    for runner in (static, packed):
        fresh(runner, 0, 1, 2, 3)
        runner.forward([SlotWork(3, tokens, 0, sample=False)])
    layer = static._cache.layers[0]
    before = layer.keys[3, : len(tokens)].clone()
    others = {slot: prompt(static, question) for slot, question in enumerate(QUESTIONS)}
    drive(static, others, 6)  # three slots decode in a bucket of 4: one row is padding
    assert torch.equal(layer.keys[3, : len(tokens)], before)
    # Slot 3 then goes on from its cache exactly as the packed runner does.
    last = static.forward([SlotWork(3, tokens[-1:], len(tokens) - 1, sample=True)])[3]
    assert last == packed.forward([SlotWork(3, tokens[-1:], len(tokens) - 1, sample=True)])[3]


def test_the_load_check_finds_both_paths_give_the_same_logits(static: HfRunner) -> None:
    fresh(static, 0)
    token = static.tokenize("Hi")[-1]
    static.forward([SlotWork(0, [token], 0, sample=True)])
    assert static._decoder is not None
    with torch.inference_mode():
        check = decode._load_check(static._decoder, token, static._packed_decode_logits)
    assert check.correct and check.relative_error < 1e-5
    assert check.eager_ms > 0 and check.graph_ms > 0


def test_a_wrong_row_is_caught_by_the_load_check(static: HfRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """If a step read another slot's keys, the check would see it: the logits come out far apart."""
    fresh(static, 0, 1)
    token = static.tokenize("Hi")[-1]
    static.forward([SlotWork(0, [token], 0, sample=True)])
    static.forward([SlotWork(1, prompt(static, "Once upon a time"), 0, sample=True)])
    decoder = static._decoder
    assert decoder is not None
    original = decoder.step
    monkeypatch.setattr(decoder, "step", lambda slots, tokens, positions: original([1], tokens, positions))
    with torch.inference_mode():
        check = decode._load_check(decoder, token, static._packed_decode_logits)
    assert not check.correct and check.relative_error > decode.CHECK_TOLERANCE


def test_buckets_cover_every_count_up_to_the_slots() -> None:
    assert decode.buckets(1) == (1,)
    assert decode.buckets(4) == (1, 2, 4)
    assert decode.buckets(6) == (1, 2, 4, 6)
    assert decode.buckets(8) == (1, 2, 4, 8)


def test_decode_steps_are_one_sampled_token_per_slot() -> None:
    assert decode.is_decode_step([SlotWork(0, [5], 9, True), SlotWork(2, [7], 3, True)])
    assert not decode.is_decode_step([SlotWork(0, [5, 6], 9, True)])
    assert not decode.is_decode_step([SlotWork(0, [5], 9, False)])


@pytest.mark.parametrize(
    ("mode", "check", "used", "label"),
    [
        ("auto", decode.LoadCheck(20.0, 5.0, 0.001), True, "CUDA graphs, batches of 1/2/4 (4.0x the eager step at load)"),
        ("auto", decode.LoadCheck(5.0, 6.0, 0.001), False, "eager: CUDA graphs were slower than the eager step at load"),
        ("auto", decode.LoadCheck(20.0, 5.0, 0.5), False, "eager: CUDA graphs were 50.0% off the eager step at load"),
        ("on", decode.LoadCheck(5.0, 6.0, 0.5), True, "CUDA graphs, batches of 1/2/4 (0.8x the eager step at load)"),
    ],
)
def test_auto_takes_graphs_only_when_correct_and_faster(mode: str, check: decode.LoadCheck, used: bool,
                                                        label: str) -> None:
    assert decode.decide(mode, check, (1, 2, 4)) == (used, label)
