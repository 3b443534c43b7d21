"""Pictures through a llama.cpp vision projector (libmtmd) on the real default model with a random mlp projector
(engine/randweights/mmproj.py): the image's tokens reach the slot's sequence as ids past the vocabulary, image
chats and a text chat share the steps, a picture is encoded once, and answers stream through the real engine.
Random weights say nothing true about a picture: counts, positions and ids are asserted, never words."""

from __future__ import annotations

import io
from typing import Iterator

import llama_cpp
import pytest

from engine.randweights.mmproj import n_image_tokens, write_mmproj
from engine.images import can_see, cannot_see
from engine.protocol import (
    ChatMessage,
    ImagePart,
    LoadModel,
    ModelConfig,
    ModelLoaded,
    SamplingParams,
    Submit,
)
from engine.runners.base import SlotWork
from engine.runners.llamacpp.runner import LlamaCppRunner
from tests.engine.engine_harness import EngineHarness

GREEDY = SamplingParams(temperature=0, max_new_tokens=6, ignore_eos=True)


def png(shade: int) -> ImagePart:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (40, 24), (shade, 255 - shade, 90)).save(out, "PNG")
    return ImagePart(out.getvalue(), "image/png")


@pytest.fixture(scope="module")
def projector(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(write_mmproj(tmp_path_factory.mktemp("mmproj") / "mmproj-random.gguf", 576))


@pytest.fixture(scope="module")
def runner(default_model: str, projector: str) -> Iterator[LlamaCppRunner]:
    config = ModelConfig(path=default_model, context_length=512, slots=4, threads=2, prompt_copy="off",
                         mmproj=projector)
    loaded = LlamaCppRunner.load(config, lambda *_: None, lambda: False)
    yield loaded
    loaded.close()


def prompt(runner: LlamaCppRunner, text: str, *images: ImagePart) -> list[int]:
    return runner.tokenize(runner.render_chat([ChatMessage("user", text, images=images)]))


def generate(runner: LlamaCppRunner, prompts: dict[int, list[int]], steps: int) -> tuple[dict[int, list[int]], list[set[int]]]:
    """Greedy tokens of each slot's prompt, all slots stepping together; the slots each step served."""
    for slot in prompts:
        runner.clear_slot(slot)
        runner.begin_turn(slot, GREEDY)
    out: dict[int, list[int]] = {slot: [] for slot in prompts}
    served = []
    work = [SlotWork(slot, ids, 0, True) for slot, ids in prompts.items()]
    for _ in range(steps):
        sampled = runner.forward(work)
        served.append(set(sampled))
        for slot, tokens in sampled.items():
            out[slot] += tokens
        work = [SlotWork(s, out[s][-1:], len(prompts[s]) + len(out[s]) - 1, True) for s in prompts]
    return out, served


def test_the_pictures_tokens_reach_the_slots_sequence(runner: LlamaCppRunner) -> None:
    assert can_see(runner.info)
    assert runner.pictures is not None
    ids = prompt(runner, "What is in this picture?", png(10))
    base = runner.pictures.base
    assert base == llama_cpp.llama_vocab_n_tokens(runner._vocab)
    generate(runner, {0: ids}, 1)
    cached = runner._cached[0]
    assert cached == ids
    assert sum(1 for t in cached if t >= base) == n_image_tokens() == 16
    memory = llama_cpp.llama_get_memory(runner._context)  # type: ignore[arg-type]
    assert llama_cpp.llama_memory_seq_pos_max(memory, 0) == len(ids) - 1  # every prompt row, the 16 included
    assert llama_cpp.llama_memory_seq_pos_min(memory, 0) == 0


def test_image_chats_and_a_text_chat_share_each_step(runner: LlamaCppRunner) -> None:
    text = prompt(runner, "Say hello.")
    alone, _ = generate(runner, {3: text}, 5)
    together, served = generate(runner, {0: prompt(runner, "Describe it.", png(40)),
                                         1: prompt(runner, "And this one?", png(200)), 3: text}, 5)
    assert served == [{0, 1, 3}] * 5  # every step sampled all three chats
    assert together[3] == alone[3]  # the pictures changed nothing of the text chat's answer


def test_the_same_picture_is_encoded_once_and_its_prefix_reused(runner: LlamaCppRunner) -> None:
    assert runner.pictures is not None
    picture = png(123)
    first = prompt(runner, "Look.", picture)
    generate(runner, {2: first}, 1)
    encodes = runner.pictures.encodes
    again = prompt(runner, "Look.", picture)
    assert again == first  # the same ids: a slot's history matches, so the scheduler reuses the prefix
    runner.copy_prefix(2, 1, len(first) - 1)
    runner.begin_turn(1, GREEDY)
    runner.forward([SlotWork(1, again[-1:], len(again) - 1, True)])
    generate(runner, {0: again}, 1)
    assert runner.pictures.encodes == encodes  # no second run of the vision encoder


@pytest.fixture(scope="module")
def engine(default_model: str, projector: str) -> Iterator[EngineHarness]:
    harness = EngineHarness()


    harness.loop.send(LoadModel(ModelConfig(path=default_model, context_length=512, slots=2, threads=2,
                                            mmproj=projector)))
    loaded = harness.wait_loaded()
    assert isinstance(loaded, ModelLoaded), loaded
    yield harness
    harness.close()


def test_an_answer_about_a_picture_streams_and_the_next_turn_reuses_it(engine: EngineHarness) -> None:
    runner = engine.loop.pool.models[-1].runner
    assert isinstance(runner, LlamaCppRunner) and runner.pictures is not None
    picture = png(77)
    mark = engine.mark()
    question = ChatMessage("user", "What is this?", images=(picture,))
    engine.loop.send(Submit("pic", (question,), GREEDY))
    end = engine.finished("pic", mark)
    assert end.reason == "length" and end.stats.generated_tokens == 6
    assert end.text == "".join(text for _, text in engine.tokens("pic", mark))
    encodes = runner.pictures.encodes
    mark = engine.mark()
    turn = (question, ChatMessage("assistant", end.text), ChatMessage("user", "More?"))
    engine.loop.send(Submit("pic", turn, GREEDY))
    again = engine.finished("pic", mark)
    assert again.stats.reused_tokens > n_image_tokens()  # the picture's rows came from the cache
    assert runner.pictures.encodes == encodes


def test_a_model_without_projector_cannot_see(default_model: str) -> None:
    config = ModelConfig(path=default_model, context_length=256, slots=1, threads=2, prompt_copy="off")
    runner = LlamaCppRunner.load(config, lambda *_: None, lambda: False)
    try:
        assert runner.pictures is None and not can_see(runner.info)
        assert "has no vision projector. Put its mmproj-*.gguf file" in cannot_see(runner.info)
    finally:
        runner.close()
