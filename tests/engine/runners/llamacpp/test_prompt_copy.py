"""Long prompts read with the F32 copy of the default model (CPU), and the cells moved to the generating context."""

from __future__ import annotations

import os
from pathlib import Path

import llama_cpp
import numpy as np
import pytest

from engine.catalog.memory import prompt_copy_wanted
from engine.protocol import ChatMessage, ModelConfig, SamplingParams
from engine.runners.base import SlotWork
from engine.runners.llamacpp import prompt_copy, seqstate
from engine.runners.llamacpp.prompt_reading import PROMPT_COPY_FAILED
from engine.runners.llamacpp.runner import LlamaCppRunner
from tests.engine.runners.llamacpp.test_runner import _distribution_shift as _shift

GREEDY = SamplingParams(temperature=0, repeat_penalty=1.0)
# The copy computes with the widened weights and unquantized activations, where the Q4_1 path rounds
# the activations to 8 bits, and with flash attention: after five ~675-token prompts the next-token
# distribution moved by 0.20-0.45 in log-probability among the 20 likeliest tokens (first and second
# token; flash attention on against off alone moves it by up to 0.30, test_runner.py). 1.0 is 2x the
# largest; cells moved to the wrong positions or a stale tail moved it by 5-20.
COPY_TOLERANCE = 1.0
LIKE_WITH_LIKE = 1e-3  # the same cells, read by the same context: equal but for summation order


def _load(path: str, **settings: object) -> LlamaCppRunner:
    config = ModelConfig(path=path, slots=2, context_length=2048, batch_tokens=256, **settings)  # type: ignore[arg-type]
    return LlamaCppRunner.load(config, lambda _f, _m: None, lambda: False)


@pytest.fixture(scope="module")
def runners(default_model: str):
    with_copy, without = _load(default_model, prompt_copy="on"), _load(default_model, prompt_copy="off")
    yield with_copy, without
    with_copy.close()
    without.close()


@pytest.fixture(scope="module")
def long_prompt(runners) -> list[int]:
    notes = " ".join(f"On day {day} the keeper logged {day * 7 % 31} boats and a wind from the {'north' if day % 2 else 'west'}."
                     for day in range(1, 36))
    messages = (ChatMessage("system", "You answer from the notes."), ChatMessage("user", f"{notes} Which wind came on day 3? Answer in one word."))
    tokens = runners[0].tokenize(runners[0].render_chat(messages))
    assert 600 < len(tokens) < 1000
    return tokens


def _read(runner: LlamaCppRunner, slot: int, tokens: list[int], chunk: int = 256) -> int:
    runner.clear_slot(slot)
    runner.begin_turn(slot, GREEDY)
    sampled: dict[int, list[int]] = {}
    for start in range(0, len(tokens), chunk):
        sampled = runner.forward([SlotWork(slot, tokens[start:start + chunk], start, start + chunk >= len(tokens))])
    return sampled[slot][0]


def _positions(runner: LlamaCppRunner, slot: int) -> tuple[int, int]:
    memory = llama_cpp.llama_get_memory(runner._context)
    return int(llama_cpp.llama_memory_seq_pos_min(memory, slot)), int(llama_cpp.llama_memory_seq_pos_max(memory, slot))


def test_a_long_prompt_read_with_the_copy_generates_as_one_read_without_it(runners, long_prompt: list[int]) -> None:
    with_copy, without = runners
    assert with_copy.info.prompt_reading.startswith("F32 copy") and with_copy.info.prompt_copy_bytes > 4 * with_copy.info.n_params
    assert without.info.prompt_reading == "" and without.info.prompt_copy_bytes == 0
    reads: list[int] = []
    original = with_copy._cache.reader.read  # type: ignore[union-attr]
    with_copy._cache.reader.read = lambda item: reads.append(len(item.tokens)) or original(item)  # type: ignore[union-attr,method-assign]
    try:
        first = _read(with_copy, 1, long_prompt)
    finally:
        del with_copy._cache.reader.read  # type: ignore[union-attr]
    # every chunk went to the copy but the last token, sampled from the generating context's logits
    assert reads == [256, 256, len(long_prompt) - 512 - 1]
    read_with_copy = with_copy.last_logits(1)
    _read(without, 0, long_prompt)
    assert _shift(without.last_logits(0), read_with_copy) <= COPY_TOLERANCE
    assert first == int(np.argmax(without.last_logits(0)))  # "The", 2.9 above the next here

    # The next token is generated in the generating context, over the cells the copy computed.
    next_token = with_copy.forward([SlotWork(1, [first], len(long_prompt), True)])[1][0]
    assert _positions(with_copy, 1) == (0, len(long_prompt))
    without.forward([SlotWork(0, [first], len(long_prompt), True)])
    assert _shift(without.last_logits(0), with_copy.last_logits(1)) <= COPY_TOLERANCE
    assert next_token == int(np.argmax(without.last_logits(0)))  # " wind", 2.1 above the next


def test_cells_read_by_the_copy_serve_a_copied_start_and_a_trimmed_turn(runners, long_prompt: list[int]) -> None:
    with_copy, _ = runners
    first = _read(with_copy, 0, long_prompt)
    with_copy.forward([SlotWork(0, [first], len(long_prompt), True)])
    expected = with_copy.last_logits(0)

    # A start copied from a chat whose cells are still in the copy: they come over first.
    first = _read(with_copy, 0, long_prompt)
    assert with_copy.copy_prefix(0, 1, len(long_prompt))
    assert _positions(with_copy, 1) == (0, len(long_prompt) - 1)
    with_copy.begin_turn(1, GREEDY)
    with_copy.forward([SlotWork(1, [first], len(long_prompt), True)])
    assert _shift(expected, with_copy.last_logits(1)) <= LIKE_WITH_LIKE

    # A turn that keeps half of the read prompt and reads the rest again (the copy's cells are stale then).
    _read(with_copy, 0, long_prompt)
    half = len(long_prompt) // 2
    assert with_copy.remove_from(0, half)
    assert _positions(with_copy, 0) == (0, half - 1)
    with_copy.begin_turn(0, GREEDY)
    rest = long_prompt[half:]
    for start in range(0, len(rest), 256):
        with_copy.forward([SlotWork(0, rest[start:start + 256], half + start, start + 256 >= len(rest))])
    with_copy.forward([SlotWork(0, [first], len(long_prompt), True)])
    assert _shift(expected, with_copy.last_logits(0)) <= COPY_TOLERANCE


def test_short_chunks_drafts_and_steps_beside_others_stay_in_the_generating_context(runners) -> None:
    with_copy, _ = runners
    reader = with_copy._cache.reader
    assert reader is not None
    short, long = list(range(100, 100 + prompt_copy.MIN_TOKENS - 1)), list(range(100, 100 + prompt_copy.MIN_TOKENS))
    assert not reader.takes(SlotWork(0, short, 0, True))
    assert reader.takes(SlotWork(0, long, 0, True))
    assert not reader.takes(SlotWork(0, long[:1], 0, True, draft=long[1:]))
    # 64 new tokens after 1,500 cells that are not in the copy: moving them costs more than it saves
    assert not reader.takes(SlotWork(0, list(range(100, 164)), 1500, True))
    assert reader.takes(SlotWork(0, list(range(100, 228)), 1500, True))


def test_sequence_state_converts_between_layouts_and_back_byte_for_byte(runners, long_prompt: list[int]) -> None:
    _, without = runners
    _read(without, 1, long_prompt[:300])
    layers = int(llama_cpp.llama_model_n_layer(without._model))
    state = seqstate.read(without._context, 1)
    parsed = seqstate.parse(state, layers)
    assert (parsed.streams, parsed.cells) == (2, 300)

    for v_trans in (True, False):
        one_stream = seqstate.convert(state, layers, 1, 0, v_trans)
        assert seqstate.parse(one_stream, layers).cells == 300
        assert seqstate.parse(one_stream, layers).v_trans is v_trans
        back = seqstate.convert(one_stream, layers, 2, 1, parsed.v_trans)
        assert np.array_equal(back, state)
    with pytest.raises(seqstate.StateFormatError):
        seqstate.parse(state[:-10], layers)


def test_auto_takes_the_copy_only_for_a_small_quantized_model_on_the_cpu() -> None:
    small, gigabytes = 135_000_000, 1 << 30
    auto, on, off = (ModelConfig(path="m.gguf", prompt_copy=choice) for choice in ("auto", "on", "off"))  # type: ignore[arg-type]
    assert prompt_copy_wanted(auto, False, "Q4_1", small, 8 * gigabytes) == (True, "")
    assert prompt_copy_wanted(auto, False, "Q4_1", small, 4 * gigabytes)[0] is False  # 540 MB > 4 GB / 8
    assert prompt_copy_wanted(on, False, "Q4_1", small, 4 * gigabytes) == (True, "")
    assert prompt_copy_wanted(auto, True, "Q4_K_M", small, 64 * gigabytes) == (False, "on the GPU, which reads them fast")
    assert prompt_copy_wanted(on, False, "F16", small, 64 * gigabytes)[0] is False
    assert prompt_copy_wanted(off, False, "Q4_1", small, 64 * gigabytes) == (False, "")


def test_the_copy_is_made_once_and_made_again_when_it_or_its_source_changed(
    default_model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "model.gguf"
    source.write_bytes(Path(default_model).read_bytes())
    copy = prompt_copy.full_precision_copy(source, threads=2)
    made = copy.stat().st_mtime_ns
    size = copy.stat().st_size
    assert copy.parent == tmp_path / "cache" / "prompt-copies"
    assert size > 3.5 * source.stat().st_size  # F32 against 4.5 bits a weight

    assert prompt_copy.full_precision_copy(source, threads=2) == copy and copy.stat().st_mtime_ns == made
    with copy.open("r+b") as file:  # a copy cut short (a full disk, a crash while writing)
        file.truncate(size // 2)
    assert prompt_copy.full_precision_copy(source, threads=2) == copy and copy.stat().st_size == size
    remade = copy.stat().st_mtime_ns
    os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 10**9))  # the source replaced
    prompt_copy.full_precision_copy(source, threads=2)
    assert copy.stat().st_mtime_ns != remade


def test_older_copies_go_but_not_one_another_process_is_writing(tmp_path: Path) -> None:
    import subprocess
    import sys

    family = "model.0123abcd"
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        names = {
            "old": f"{family}.1f00.F32.gguf", "old record": f"{family}.1f00.F32.json",
            "crashed": f"{family}.2f00.F32.gguf.{dead.pid}.partial",
            "being written": f"{family}.2f00.F32.gguf.{writer.pid}.partial",
            "another model": "other.89abcdef.1f00.F32.gguf",
        }
        for name in names.values():
            (tmp_path / name).write_bytes(b"x")
        prompt_copy.remove_older_copies(tmp_path, family)
        left = {label for label, name in names.items() if (tmp_path / name).exists()}
        assert left == {"being written", "another model"}
    finally:
        writer.kill()
        writer.wait()


def test_a_copy_that_cannot_be_made_leaves_prompts_in_the_generating_context_and_says_why(
    default_model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "prompt-copies").write_text("a file where the folder should be")
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path))
    runner = _load(default_model, prompt_copy="on")
    try:
        assert runner._cache.reader is None and runner.info.prompt_reading == PROMPT_COPY_FAILED
        assert runner.info.prompt_copy_bytes == 0
        # what it means and what to do, in the user's words; llama.cpp's detail is in the log
        [note] = [note for note in runner.info.notes if note.startswith("Long prompts are read at the usual speed")]
        assert "could not be saved in Hearth's cache folder" in note and "Settings" in note
        prompt = runner.tokenize("A sentence about the sea, repeated. " * 20)
        _read(runner, 0, prompt)
        assert _positions(runner, 0) == (0, len(prompt) - 1)
    finally:
        runner.close()
