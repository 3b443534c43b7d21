"""A picture is encoded beside the steps (picture_encoder.py): other chats answer while it encodes, and the
picture's chat reads it once it is ready. On the real default model with a random mlp projector on the CPU.

The encoder is held at a gate the test opens, so "while it encodes" is a state, never a timing: every token
the text chat gets before the gate opens came while the picture's encode had not finished.
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
from llama_cpp import mtmd_cpp as mtmd

from engine.picture_tokens import picture_counter
from engine.protocol import ChatMessage, ModelConfig, SamplingParams
from engine.randweights.mmproj import n_image_tokens, write_mmproj
from engine.runners.base import RunnerError, SlotWork
from engine.runners.llamacpp.runner import LlamaCppRunner
from engine.scheduler import Scheduler
from tests.engine.runners.llamacpp.test_pictures import png

GREEDY = SamplingParams(temperature=0, max_new_tokens=6, ignore_eos=True, speculative="off")


@pytest.fixture(scope="module")
def runner(default_model: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaCppRunner]:
    projector = write_mmproj(tmp_path_factory.mktemp("mmproj") / "mmproj-random.gguf", 576)
    config = ModelConfig(path=default_model, context_length=512, slots=4, threads=2, prompt_copy="off",
                         mmproj=str(projector))
    loaded = LlamaCppRunner.load(config, lambda *_: None, lambda: False)
    yield loaded
    loaded.close()


class Gate:
    """Holds the runner's picture encodes until `open()`; notes the threads they ran on."""

    def __init__(self, runner: LlamaCppRunner, monkeypatch: pytest.MonkeyPatch) -> None:
        assert runner.pictures is not None
        encoder = runner.pictures.encoder
        encode = encoder._encode
        self.event, self.started = threading.Event(), threading.Event()
        self.threads: list[str] = []

        def held(piece: object) -> None:
            self.threads.append(threading.current_thread().name)
            self.started.set()
            assert self.event.wait(60), "the test never opened the gate"
            encode(piece)  # type: ignore[arg-type]

        monkeypatch.setattr(encoder, "_encode", held)

    def open(self) -> None:
        self.event.set()


@pytest.fixture
def gate(runner: LlamaCppRunner, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    held = Gate(runner, monkeypatch)
    yield held
    held.open()  # a failed test's encode goes on and its thread ends


def new_scheduler(runner: LlamaCppRunner) -> Scheduler:
    for slot in range(runner.slots):  # another test's chats are in the cells: this scheduler starts empty
        runner.clear_slot(slot)
    return Scheduler(runner, ngram_pool=False)


def ids(runner: LlamaCppRunner, text: str, *images: object) -> list[int]:
    return runner.tokenize(runner.render_chat([ChatMessage("user", text, images=images)]))  # type: ignore[arg-type]


def run(scheduler: Scheduler, steps: int) -> None:
    for _ in range(steps):
        scheduler.step()


def test_a_text_chat_answers_while_another_chats_picture_encodes(runner: LlamaCppRunner, gate: Gate) -> None:
    assert runner.pictures is not None
    encodes = runner.pictures.encodes
    scheduler = new_scheduler(runner)
    picture_prompt = ids(runner, "Describe this.", png(77))
    first_row = min(i for i, t in enumerate(picture_prompt) if t >= runner.pictures.base)
    scheduler.submit("picture", picture_prompt, GREEDY)
    scheduler.submit("text", ids(runner, "Count to ten."), GREEDY)
    run(scheduler, 4)
    assert gate.started.wait(30)  # the encode began on its thread, and waits at the gate
    (picture,) = [s for s in scheduler.running() if s.chat_id == "picture"]
    assert picture.computed == first_row  # its text before the picture is read; its rows wait for the encode
    meanwhile = [chat for _, chat in scheduler.sampled_log]
    assert meanwhile == ["text"] * len(meanwhile) and len(meanwhile) >= 2  # the text chat answered meanwhile
    assert runner.pictures.encodes == encodes
    gate.open()
    for _ in range(200):
        if not scheduler.has_work():
            break
        scheduler.step()
    order = [chat for _, chat in scheduler.sampled_log]
    assert order.count("picture") == order.count("text") == GREEDY.max_new_tokens
    assert order[:len(meanwhile)] == meanwhile
    assert gate.threads == ["hearth-picture-encoder"] and runner.pictures.encodes == encodes + 1
    slot = next(i for i in range(runner.slots) if runner._cached[i][:len(picture_prompt)] == picture_prompt)
    assert sum(1 for t in runner._cached[slot] if t >= runner.pictures.base) == n_image_tokens()


def test_pictures_encoded_beside_the_steps_are_libmtmds_rows_and_read_in_chunks(runner: LlamaCppRunner,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Two pictures side by side in one message, read through the scheduler in chunks of 5 that stop before a
    picture still encoding: each picture's rows are what libmtmd's encoder makes of it on this thread (each its
    own: libmtmd's output buffer is the next encode's), and the same chunks read again by forward alone sample
    from the same logits."""
    assert runner.pictures is not None
    images = (png(141), png(20))
    prompt = ids(runner, "Which is darker?", *images)
    scheduler = new_scheduler(runner)
    scheduler.prompt_tokens_cap = 5
    chunks: list[tuple[int, int]] = []
    forward = runner.forward

    def noted(work: list[SlotWork]) -> dict[int, list[int]]:
        chunks.extend((item.start_pos, len(item.tokens)) for item in work)
        return forward(work)

    monkeypatch.setattr(runner, "forward", noted)
    scheduler.submit("chunks", prompt, SamplingParams(temperature=0, max_new_tokens=1, ignore_eos=True))
    logits = None
    for _ in range(400):
        slots = {slot.index for slot, _ in scheduler.slots.running()}
        scheduler.step()
        if scheduler.sampled_log:
            logits = runner.last_logits(slots.pop())
            break
    assert logits is not None
    monkeypatch.undo()
    pieces = list({runner.pictures.slice_of(t).first_id: runner.pictures.slice_of(t)
                   for t in prompt if t >= runner.pictures.base}.values())
    assert [piece.count for piece in pieces] == [n_image_tokens()] * 2
    assert pieces[1].first_id == pieces[0].first_id + pieces[0].count  # their ids run on: one run, two pictures
    for piece, image in zip(pieces, images):
        assert piece.embeddings is not None
        assert np.array_equal(piece.embeddings, encoded_here(runner, image))
    assert sum(chunks[i][1] for i in range(len(chunks))) == len(prompt)
    runner.clear_slot(3)
    runner.begin_turn(3, GREEDY)
    for start, length in chunks:
        runner.forward([SlotWork(3, prompt[start:start + length], start, start + length == len(prompt))])
    assert float(np.abs(runner.last_logits(3) - logits).max()) <= 1e-3
    runner.clear_slot(2)
    runner.begin_turn(2, GREEDY)
    assert list(runner.forward([SlotWork(2, prompt, 0, True)])) == [2]  # and whole, the two runs kept apart


def encoded_here(runner: LlamaCppRunner, image: object) -> np.ndarray:
    """libmtmd's own encode of `image`, on this thread: its tokenization, then mtmd_encode_chunk."""
    from tests.engine.runners.llamacpp.mtmd_reference import _bitmap

    assert runner.pictures is not None
    ctx, bitmap, chunks = runner.pictures._ctx, _bitmap(image), mtmd.mtmd_input_chunks_init()  # type: ignore[arg-type]
    try:
        marker = mtmd.mtmd_default_marker()
        text = mtmd.mtmd_input_text(marker, len(marker), False, True)
        assert mtmd.mtmd_tokenize(ctx, chunks, ctypes.byref(text), (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap), 1) == 0
        (chunk,) = [mtmd.mtmd_input_chunks_get(chunks, i) for i in range(mtmd.mtmd_input_chunks_size(chunks))
                    if mtmd.mtmd_input_chunk_get_type(mtmd.mtmd_input_chunks_get(chunks, i))
                    == mtmd.MTMD_INPUT_CHUNK_TYPE_IMAGE]
        assert mtmd.mtmd_encode_chunk(ctx, chunk) == 0
        rows = int(mtmd.mtmd_input_chunk_get_n_tokens(chunk))
        out = np.ctypeslib.as_array(mtmd.mtmd_get_output_embd(ctx), shape=(rows * runner.pictures.n_embd,))
        return out.reshape(rows, runner.pictures.n_embd).copy()
    finally:
        mtmd.mtmd_input_chunks_free(chunks)
        mtmd.mtmd_bitmap_free(bitmap)


def test_the_chips_count_is_the_prompts_and_needs_the_loaded_model(runner: LlamaCppRunner, tmp_path: Path) -> None:
    assert runner.pictures is not None
    counter = picture_counter(runner.info.path)
    assert counter is not None
    prompt = ids(runner, "Hm?", png(5))
    assert counter(40, 24) == runner.pictures.count(40, 24) == sum(1 for t in prompt if t >= runner.pictures.base)
    assert counter(40, 24) == n_image_tokens() == 16  # an mlp projector: 16 rows whatever the size
    with pytest.raises(RunnerError, match="not loaded"):
        picture_counter(str(tmp_path / "other.gguf"))(40, 24)  # type: ignore[misc]


@pytest.mark.skipif(not hasattr(os, "sched_getscheduler"), reason="the idle scheduling class is Linux's")
def test_the_encoders_thread_gives_way_to_the_steps_at_once() -> None:
    from engine.runners.llamacpp.picture_encoder import _be_nice

    seen: list[int] = []

    def encoder() -> None:
        _be_nice()
        seen.append(os.sched_getscheduler(threading.get_native_id()))

    thread = threading.Thread(target=encoder)
    thread.start()
    thread.join()
    assert seen == [os.SCHED_IDLE]  # a waking step's thread preempts it, with no wake-up granularity to wait
    assert os.sched_getscheduler(threading.get_native_id()) == os.SCHED_OTHER  # the caller's own is untouched
