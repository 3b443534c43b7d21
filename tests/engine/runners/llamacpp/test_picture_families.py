"""Pictures of the vision families beyond LLaVA in Hearth's batched llama.cpp path, against libmtmd's own.

Per family, a random-weights text model of the family's architecture and a projector of its type
(engine/randweights/vision_text.py, vision_projectors.py): Gemma 3 (its picture's rows attend to each other
both ways), Qwen2.5-VL and Qwen3-VL (M-RoPE: a picture's rows share one time position, the text after it
moves on by max(rows, columns) of its grid, not by its row count; Qwen3-VL's rows also carry deepstack
features) and SmolVLM (Idefics3: a picture cut into tiles plus an overview, five image chunks). Hearth's
path, several chats in one step, is compared with libmtmd's helper path (mtmd_helper_eval_chunks into a
context of its own, then greedy decoding), token by token with the reference's tokens fed back (teacher
forcing): every step's logits agree within TOLERANCE, and Hearth's greedy token is the reference's wherever
the reference's best two logits are further apart than twice that (so no near-tie decides a test). Random
weights say nothing true about a picture: logits, counts and positions are asserted, never words.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import llama_cpp
import numpy as np
import pytest

from engine.protocol import ChatMessage, ImagePart, ModelConfig, SamplingParams
from engine.randweights.vision_projectors import IDEFICS3_TOKENS, write_vision_projector
from engine.randweights.vision_text import TextShape, write_vision_text_model
from engine.runners.base import SlotWork
from engine.runners.llamacpp.runner import LlamaCppRunner
from engine.sequence import common_prefix_length
from tests.engine.runners.llamacpp.mtmd_reference import Reference, hearth_layout, reference_answer, reference_context

STEPS = 16
TOLERANCE = 0.01  # logits here spread with a standard deviation of about 4 (vision_text.py); seen: 0.00015
GREEDY = SamplingParams(temperature=0, repeat_penalty=1.0, max_new_tokens=STEPS, ignore_eos=True)
FAMILIES = {  # text architecture, projector type, tokens the projector looks up in the vocabulary
    "gemma3": ("gemma3", "gemma3", ()),
    "qwen2.5vl": ("qwen2vl", "qwen2.5vl_merger", ()),
    "qwen3vl": ("qwen3vl", "qwen3vl_merger", ()),  # its rows carry deepstack features: twice the text width
    "smolvlm": ("llama", "idefics3", IDEFICS3_TOKENS),
}


@dataclass
class Family:
    name: str
    runner: LlamaCppRunner
    context: Any  # the reference's (mtmd_reference.py)

    def reference(self, messages: list[ChatMessage], steps: int = STEPS) -> Reference:
        return reference_answer(self.runner, self.context, messages, steps)


def picture(seed: int, width: int = 40, height: int = 24) -> ImagePart:
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return ImagePart(out.getvalue(), "image/png")


@pytest.fixture(scope="module")
def tokenizer_source(default_model: str) -> Any:
    """The default model's GGUF, open once: its tokenizer and chat template go into every family's model."""
    import gguf

    return gguf.GGUFReader(default_model)


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request: pytest.FixtureRequest, tokenizer_source: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Family]:
    arch, kind, markers = FAMILIES[request.param]
    folder: Path = tmp_path_factory.mktemp(request.param)
    shape = TextShape()
    model = write_vision_text_model(folder / f"random-{arch}.gguf", tokenizer_source, arch, shape, extra_tokens=markers)
    projector = write_vision_projector(folder / f"mmproj-{kind}.gguf", kind, shape.embedding)
    config = ModelConfig(path=str(model), context_length=512, slots=4, threads=1, prompt_copy="off",
                         mmproj=str(projector))
    runner = LlamaCppRunner.load(config, lambda *_: None, lambda: False)
    assert runner.pictures is not None, "llama.cpp did not take the random projector"
    context = reference_context(runner, config)
    yield Family(request.param, runner, context)
    llama_cpp.llama_free(context)
    runner.close()


def prompt_ids(runner: LlamaCppRunner, messages: list[ChatMessage]) -> list[int]:
    return runner.tokenize(runner.render_chat(messages))


def forced(runner: LlamaCppRunner, chats: dict[int, tuple[list[int], Reference]], chunk: int = 0,
           start: dict[int, int] | None = None) -> dict[int, tuple[list[int], list[np.ndarray]]]:
    """Every slot's prompt (from `start[slot]` on, the rest in its cache already) read and answered in shared
    steps, each slot fed its reference's tokens; each slot's greedy tokens and logits. `chunk`: prompts read
    that many tokens a step (0: whole)."""
    start = start or {}
    for slot in chats:
        runner.begin_turn(slot, GREEDY)
    read = {slot: start.get(slot, 0) for slot in chats}
    out: dict[int, tuple[list[int], list[np.ndarray]]] = {slot: ([], []) for slot in chats}
    while any(len(out[slot][0]) < STEPS for slot in chats):
        work = []
        for slot, (ids, reference) in chats.items():
            answered = len(out[slot][0])
            if read[slot] < len(ids):
                end = len(ids) if not chunk else min(len(ids), read[slot] + chunk)
                work.append(SlotWork(slot, ids[read[slot]:end], read[slot], end == len(ids)))
                read[slot] = end
            elif answered < STEPS:
                work.append(SlotWork(slot, [reference.tokens[answered - 1]], len(ids) + answered - 1, True))
        sampled = runner.forward(work)
        for slot, tokens in sampled.items():
            out[slot][0].append(tokens[0])
            out[slot][1].append(runner.last_logits(slot))
    return out


def assert_agrees(name: str, got: tuple[list[int], list[np.ndarray]], reference: Reference) -> None:
    tokens, logits = got
    for step, (token, row, expected) in enumerate(zip(tokens, logits, reference.logits)):
        difference = float(np.abs(row - expected).max())
        assert difference <= TOLERANCE, f"{name}, step {step}: logits differ by {difference:.4f}"
        best, second = np.sort(expected)[-2:][::-1]
        if best - second > 2 * TOLERANCE:
            assert token == reference.tokens[step], f"{name}, step {step}: {token} for {reference.tokens[step]}"


def test_a_pictures_tokens_and_positions_are_libmtmds(family: Family) -> None:
    runner = family.runner
    messages = [ChatMessage("user", "What is in this picture?", images=(picture(1),))]
    ids = prompt_ids(runner, messages)
    reference = family.reference(messages, 1)
    assert hearth_layout(runner, ids) == reference.prompt_tokens  # the same text tokens, the same image runs
    assert runner.pictures is not None
    slices = list({runner.pictures.slice_of(t).first_id: runner.pictures.slice_of(t)
                   for t in ids if t >= runner.pictures.base}.values())
    assert [s.count for s in slices] == reference.image_tokens and [s.n_pos for s in slices] == reference.image_positions
    if family.name == "smolvlm":  # 40x24 pixels to 64x38: 2x2 tiles of 32 and an overview, 16 rows each
        assert [(s.count, s.n_pos, s.non_causal) for s in slices] == [(16, 16, False)] * 5
        assert not runner.pictures.mrope
        return
    (piece,) = slices
    if family.name == "gemma3":  # 8x8 patches pooled 2x2: 16 rows, one position each, attending both ways
        assert (piece.count, piece.n_pos, piece.non_causal, runner.pictures.mrope) == (16, 16, True, False)
    else:  # 40x24 pixels: 10x6 patches, merged 2x2: 5x3 rows sharing time, the text moving on by 5
        assert (piece.count, piece.n_pos, piece.non_causal, runner.pictures.mrope) == (15, 5, False, True)
        assert piece.positions(7, range(0, 6)).tolist() == [[7, 7, 7, 0], [7, 7, 8, 0], [7, 7, 9, 0], [7, 7, 10, 0],
                                                            [7, 7, 11, 0], [7, 8, 7, 0]]  # t, y (row), x (column), z


def test_picture_chats_beside_text_chats_answer_as_libmtmd_does(family: Family) -> None:
    """One picture; a picture after a turn of text; two pictures; a text chat: in the same steps."""
    runner = family.runner
    chats = {
        0: [ChatMessage("user", "Describe this.", images=(picture(2),))],
        1: [ChatMessage("user", "Hello there."), ChatMessage("assistant", "Hello! How can I help?"),
            ChatMessage("user", "What do you see here?", images=(picture(3, 24, 40),))],
        2: [ChatMessage("user", "Compare these two.", images=(picture(4), picture(5)))],
        3: [ChatMessage("user", "Tell me a story about a lighthouse.")],
    }
    prompts = {slot: (prompt_ids(runner, messages), family.reference(messages))
               for slot, messages in chats.items()}
    for slot in chats:
        runner.clear_slot(slot)
    got = forced(runner, prompts)
    for slot, (_, reference) in prompts.items():
        assert_agrees(f"{family.name} chat {slot}", got[slot], reference)
    assert got[0][0] != got[2][0]  # the pictures decide the answers


def test_a_picture_read_in_small_chunks_answers_the_same(family: Family) -> None:
    """The scheduler cuts prompts by token count: chunks of 5 end inside the picture's rows."""
    runner = family.runner
    messages = [ChatMessage("user", "And this one?", images=(picture(6),))]
    ids = prompt_ids(runner, messages)
    reference = family.reference(messages)
    runner.clear_slot(1)
    runner.clear_slot(3)
    text = [ChatMessage("user", "Count to ten.")]
    beside = (prompt_ids(runner, text), family.reference(text))
    got = forced(runner, {1: (ids, reference), 3: beside}, chunk=5)
    assert_agrees(f"{family.name} in chunks", got[1], reference)
    assert_agrees(f"{family.name} text beside", got[3], beside[1])


def test_the_next_turn_keeps_the_picture_and_another_tab_copies_it(family: Family) -> None:
    runner = family.runner
    assert runner.pictures is not None
    question = ChatMessage("user", "What is this?", images=(picture(7),))
    first = prompt_ids(runner, [question])
    runner.clear_slot(0)
    answer = forced(runner, {0: (first, family.reference([question]))})[0][0]
    assert len(answer) == STEPS
    turn = [question, ChatMessage("assistant", "Yes."), ChatMessage("user", "Say more.")]
    ids = prompt_ids(runner, turn)
    cached = runner._cached[0]
    keep = common_prefix_length(cached, ids)
    assert keep > max(i for i, t in enumerate(ids) if t >= runner.pictures.base)  # the picture stays
    inside = next(i for i, t in enumerate(ids) if t >= runner.pictures.base) + 1
    if family.name != "smolvlm":  # never half a picture whose rows share positions or saw each other
        assert not runner.remove_from(0, inside)
    assert runner.remove_from(0, keep)
    reference = family.reference(turn)
    assert_agrees(f"{family.name} next turn", forced(runner, {0: (ids, reference)}, start={0: keep})[0], reference)
    runner.clear_slot(2)
    assert runner.copy_prefix(0, 2, keep)
    assert_agrees(f"{family.name} copied", forced(runner, {2: (ids, reference)}, start={2: keep})[2], reference)


def test_a_tab_midway_through_a_picture_lends_no_half_of_it(family: Family) -> None:
    """A donor whose prompt stops three rows into a picture: its cells hold the whole picture (Gemma 3 read
    it ahead) or rows that share one position (Qwen), so no other slot may take its first three rows."""
    runner = family.runner
    assert runner.pictures is not None
    ids = prompt_ids(runner, [ChatMessage("user", "Look.", images=(picture(10),))])
    first = next(i for i, t in enumerate(ids) if t >= runner.pictures.base)
    runner.clear_slot(0)
    runner.begin_turn(0, GREEDY)
    runner.forward([SlotWork(0, ids[:first + 3], 0, False)])
    whole = runner.pictures.slice_of(ids[first]).whole
    assert whole == (family.name != "smolvlm")
    assert runner.copy_prefix(0, 1, first + 3) is not whole
    assert runner.copy_prefix(0, 1, first)  # up to the picture: always
    assert runner._cached[1] == ids[:first]


def test_through_the_engine_a_next_turn_and_another_tab_reuse_a_qwen_picture(tokenizer_source: Any, tmp_path: Path) -> None:
    """The scheduler's own prefix reuse over M-RoPE positions: the next turn keeps the picture's cells, and a
    second tab with the same conversation copies them from the first and answers exactly as it does."""
    from engine.protocol import LoadModel, ModelLoaded, Submit
    from tests.engine.engine_harness import EngineHarness

    model = write_vision_text_model(tmp_path / "random-qwen2vl.gguf", tokenizer_source, "qwen2vl")
    projector = write_vision_projector(tmp_path / "mmproj-qwen2.5vl.gguf", "qwen2.5vl_merger", TextShape().embedding)
    harness = EngineHarness()
    try:
        harness.loop.send(LoadModel(ModelConfig(path=str(model), context_length=512, slots=2, threads=1,
                                                prompt_copy="off", mmproj=str(projector))))
        assert isinstance(harness.wait_loaded(), ModelLoaded)
        runner = harness.loop.pool.models[-1].runner
        assert isinstance(runner, LlamaCppRunner) and runner.pictures is not None and runner.pictures.mrope
        params = SamplingParams(temperature=0, repeat_penalty=1.0, max_new_tokens=8, ignore_eos=True)
        question = ChatMessage("user", "What is this?", images=(picture(9),))
        mark = harness.mark()
        harness.loop.send(Submit("a", (question,), params))
        first = harness.finished("a", mark)
        encodes = runner.pictures.encodes
        turn = (question, ChatMessage("assistant", first.text), ChatMessage("user", "Say more."))
        mark = harness.mark()
        harness.loop.send(Submit("a", turn, params))
        again = harness.finished("a", mark)
        assert again.reason == "length" and again.stats.reused_tokens > 15  # past the picture's 15 rows
        mark = harness.mark()
        harness.loop.send(Submit("b", turn, params))
        copied = harness.finished("b", mark)
        assert copied.stats.reused_tokens > 15 and copied.text == again.text
        assert runner.pictures.encodes == encodes  # the picture went through the vision encoder once
    finally:
        harness.close()
