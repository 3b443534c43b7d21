"""Each image-text kind the transformers runner handles, against transformers' own `generate` on the processor's
output: the runner's prompt ids are the processor's, and in one batch (a picture; two pictures; a picture after
a first exchange; a text chat), fed in chunks that cut pictures apart, every chat's first 16 greedy tokens and
their logits are generate's. Picture token counts before sending are the processor's. A kind not handled is
refused at load.

Tolerance: the logits of every step within LOGIT_TOLERANCE of generate's (fp32 on the CPU), each chat fed
generate's tokens (teacher forcing), so one near-tie cannot send the two runs apart. The tokens must be
generate's at every step whose top-2 gap is at least GAP_FLOOR (ten times the tolerance: there the
logits' agreement decides the token on any CPU); a random model has the odd near-tie, where only the logits
are compared.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any, Iterator

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("PIL")

from engine.images import MARK_PATTERN  # noqa: E402
from engine.protocol import ChatMessage, ImagePart, ModelConfig  # noqa: E402
from engine.runners.base import RunnerError, SlotWork  # noqa: E402
from engine.runners.hf.runner import GREEDY, HfRunner  # noqa: E402
from engine.runners.hf.vision_kinds import KINDS, attention_for, installed  # noqa: E402
from tests.engine.runners.hf.tiny_vision import picture  # noqa: E402
from tests.engine.runners.hf.tiny_vision_kinds import BUILDERS  # noqa: E402

pytestmark = [pytest.mark.hf, pytest.mark.slow]

NEW_TOKENS = 16
LOGIT_TOLERANCE = 1e-4
GAP_FLOOR = 1e-3

RED = ImagePart(picture((200, 20, 20)), "image/png")  # 40 x 30
BLUE = ImagePart(picture((20, 20, 200), size=(24, 56), kind="JPEG"), "image/jpeg")  # taller than wide
GREEN = ImagePart(picture((20, 200, 20), size=(64, 40), kind="WEBP"), "image/webp")

CHATS: dict[str, list[ChatMessage]] = {
    "one picture": [ChatMessage("user", "What colour is it?", images=(RED,))],
    "two pictures": [ChatMessage("user", "Which one is bigger?", images=(RED, BLUE))],
    "picture after text": [ChatMessage("user", "Hello! How are you today?"),
                           ChatMessage("assistant", "I am fine, thank you."),
                           ChatMessage("user", "And this one?", images=(GREEN,))],
    "text only": [ChatMessage("user", "The capital of France is")],
}


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def runner(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HfRunner]:
    missing = [name for name in KINDS[request.param].packages if not installed(name)]
    if missing:  # the hf extra brings them (pyproject.toml); without them the kind is refused (last test)
        pytest.skip(f"{request.param} needs {', '.join(missing)}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: a second thread only waits (half the CPU time on 2 cores)
    try:
        folder = BUILDERS[request.param](tmp_path_factory.mktemp(request.param) / f"tiny-{request.param}")
        config = ModelConfig(path=str(folder), backend="hf", slots=4, context_length=256, batch_tokens=256,
                             device="cpu")
        loaded = HfRunner.load(config, lambda fraction, message: None, lambda: False)
        yield loaded
        loaded.close()
    finally:
        torch.set_num_threads(threads)


def images_of(messages: list[ChatMessage]) -> list[Any]:
    from PIL import Image

    return [Image.open(io.BytesIO(image.data)).convert("RGB") for message in messages for image in message.images]


def reference_inputs(runner: HfRunner, messages: list[ChatMessage]) -> Any:
    """The processor's own inputs for the prompt the runner renders, the kind's placeholder where a picture goes."""
    pictures = runner._pictures
    assert pictures is not None
    text = MARK_PATTERN.sub(pictures.placeholder, runner.render_chat(messages))
    images = images_of(messages)
    return pictures.processor(text=text, images=images or None, return_tensors="pt", add_special_tokens=False)


def generate(runner: HfRunner, inputs: Any) -> tuple[list[int], list[Any]]:
    with torch.inference_mode():
        out = runner.model.generate(**inputs, max_new_tokens=NEW_TOKENS, do_sample=False, output_logits=True,
                                    return_dict_in_generate=True)
    tokens = out.sequences[0, inputs["input_ids"].shape[1]:].tolist()
    return tokens, [row[0].float() for row in out.logits]


def run_batched(runner: HfRunner, prompts: dict[int, list[int]], forced: dict[int, list[int]], chunk: int,
                delays: dict[int, int]) -> tuple[dict[int, list[int]], dict[int, list[Any]]]:
    """The scheduler's shape of work: prompt chunks beside other chats' decode tokens, one forward per step;
    each chat goes on with `forced`'s token, whatever it sampled."""
    lengths = {slot: len(tokens) for slot, tokens in forced.items()}
    for slot in prompts:
        runner.clear_slot(slot)
        runner.begin_turn(slot, GREEDY)
    computed = dict.fromkeys(prompts, 0)
    pending = {slot: list(tokens) for slot, tokens in prompts.items()}
    tokens: dict[int, list[int]] = {slot: [] for slot in prompts}
    logits: dict[int, list[Any]] = {slot: [] for slot in prompts}
    step = 0
    while any(len(tokens[slot]) < lengths[slot] for slot in prompts):
        work = [SlotWork(slot, pending[slot][:chunk], computed[slot], sample=len(pending[slot]) <= chunk)
                for slot in prompts if step >= delays.get(slot, 0) and len(tokens[slot]) < lengths[slot]]
        sampled = runner.forward(work)
        for item in work:
            computed[item.slot] += len(item.tokens)
            del pending[item.slot][: len(item.tokens)]
            if item.slot in sampled:
                (token,) = sampled[item.slot]
                tokens[item.slot].append(token)
                logits[item.slot].append(torch.from_numpy(runner.last_logits(item.slot)))
                pending[item.slot] = [forced[item.slot][len(tokens[item.slot]) - 1]]
        step += 1
    return tokens, logits


def as_processor_ids(runner: HfRunner, ids: list[int]) -> list[int]:
    pictures = runner._pictures
    assert pictures is not None
    return [pictures.image_token_id if token >= pictures.base else token for token in ids]


def test_batched_chats_with_pictures_match_generate(runner: HfRunner) -> None:
    prompts, references = {}, {}
    for slot, (name, messages) in enumerate(CHATS.items()):
        prompts[slot] = runner.tokenize(runner.render_chat(messages))
        inputs = reference_inputs(runner, messages)
        assert as_processor_ids(runner, prompts[slot]) == inputs["input_ids"][0].tolist(), name
        references[slot] = generate(runner, inputs)
    forced = {slot: reference[0] for slot, reference in references.items()}
    # chunks of 12 cut pictures apart; the text chat and the two-picture chat start a step late
    base = runner._pictures.base  # type: ignore[union-attr]
    assert any(ids[k - 1] >= base and ids[k] == ids[k - 1] + 1 for ids in prompts.values() for k in range(12, len(ids), 12))
    tokens, logits = run_batched(runner, prompts, forced, chunk=12, delays={1: 1, 3: 1})
    decided = 0
    for slot, name in enumerate(CHATS):
        expected_tokens, expected_logits = references[slot]
        worst = max(float((ours - theirs).abs().max()) for ours, theirs in zip(logits[slot], expected_logits))
        assert worst <= LOGIT_TOLERANCE, f"{name}: logits {worst:.2e} from generate's"
        for step, (ours, theirs, row) in enumerate(zip(tokens[slot], expected_tokens, expected_logits)):
            top = row.topk(2).values
            if float(top[0] - top[1]) >= GAP_FLOOR:
                assert ours == theirs, f"{name}: token {step}"
                decided += 1
    assert len(forced[0]) == NEW_TOKENS  # the picture chat really answered 16 tokens (no end token early)
    assert decided >= 0.8 * sum(len(tokens) for tokens in forced.values())  # near-ties are the exception


def test_a_picture_changes_the_answer(runner: HfRunner) -> None:
    """Guards the comparison above: another picture moves the first logits far beyond the tolerance."""
    first = {}
    for image in (RED, GREEN):
        ids = runner.tokenize(runner.render_chat([ChatMessage("user", "What colour is it?", images=(image,))]))
        runner.clear_slot(0)
        runner.begin_turn(0, GREEDY)
        runner.forward([SlotWork(0, ids, 0, True)])
        first[image.mime] = torch.from_numpy(runner.last_logits(0))
    assert float((first["image/png"] - first["image/webp"]).abs().max()) > 100 * LOGIT_TOLERANCE


def test_a_next_turn_reuses_the_cached_picture(runner: HfRunner) -> None:
    """Turn 2 feeds only what follows the cached prefix (a picture in it): the logits are a fresh prefill's,
    so the positions after a cached picture (M-RoPE's shift) and its attention are kept right across turns."""
    first = [ChatMessage("user", "Which one is bigger?", images=(RED, BLUE))]
    second = [*first, ChatMessage("assistant", "The red one."), ChatMessage("user", "And the blue one?")]
    before = runner.tokenize(runner.render_chat(first))
    after = runner.tokenize(runner.render_chat(second))
    common = len(os.path.commonprefix([before, after]))  # what a slot keeps between the turns
    pictures = runner._pictures
    assert pictures is not None and any(token >= pictures.base for token in after[:common])
    fresh_logits = {}
    for slot, feeds in ((0, [(after, 0)]), (1, [(before, 0), (after[common:], common)])):
        runner.clear_slot(slot)
        runner.begin_turn(slot, GREEDY)
        for tokens, start in feeds:
            runner.remove_from(slot, start)
            runner.forward([SlotWork(slot, tokens, start, True)])
        fresh_logits[slot] = torch.from_numpy(runner.last_logits(slot))
    assert float((fresh_logits[0] - fresh_logits[1]).abs().max()) <= LOGIT_TOLERANCE


@pytest.mark.parametrize("size", [(40, 30), (24, 56), (200, 120)])
def test_picture_token_count_before_sending_is_the_processors(runner: HfRunner, size: tuple[int, int]) -> None:
    from PIL import Image

    image = ImagePart(picture((90, 90, 30), size=size), "image/png")
    pictures = runner._pictures
    assert pictures is not None
    counted = runner.picture_tokens(*size)
    out = pictures.processor(text=pictures.placeholder, images=[Image.open(io.BytesIO(image.data)).convert("RGB")],
                             return_tensors="pt", add_special_tokens=False)
    assert counted == out["input_ids"].shape[1]
    plain = runner.tokenize(runner.render_chat([ChatMessage("user", "Look.")]))
    seen = runner.tokenize(runner.render_chat([ChatMessage("user", "Look.", images=(image,))]))
    assert len(seen) - len(plain) == counted
    image_tokens = int((out["input_ids"] == pictures.image_token_id).sum())
    assert sum(1 for token in seen if token >= pictures.base) == image_tokens > 0


def config_only(folder: Path, model_type: str) -> ModelConfig:
    """A folder whose config.json names a vision kind: refused before any weights or processor are read."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": model_type, "vision_config": {"depth": 1},
                                                    "text_config": {"hidden_size": 8}}))
    (folder / "model.safetensors").write_bytes(b"")
    return ModelConfig(path=str(folder), backend="hf", device="cpu")


def test_the_windows_counter_counts_as_the_runner(runner: HfRunner, tiny_model: str) -> None:
    """engine/picture_tokens.py: the chip's count, from the folder's processor alone, is the runner's."""
    from engine.picture_tokens import picture_counter

    counter = picture_counter(runner.info.path)
    assert counter is not None and counter(64, 40) == runner.picture_tokens(64, 40)
    assert picture_counter(tiny_model) is None and picture_counter("") is None  # a text model; no model


def test_a_picture_the_processor_refuses_gets_a_sentence(runner: HfRunner) -> None:
    """4000 x 3 pixels: Qwen2-VL's resize refuses it (aspect ratio over 200); the others squeeze it. Either way
    no bare exception from inside transformers reaches the chat."""
    image = ImagePart(picture((1, 2, 3), size=(4000, 3)), "image/png")
    pictures = runner._pictures
    assert pictures is not None
    try:
        ids = runner.tokenize(runner.render_chat([ChatMessage("user", "What is it?", images=(image,))]))
    except RunnerError as error:
        assert pictures.kind.mrope and "(4000 x 3 pixels) cannot go to this Qwen" in str(error)
        with pytest.raises(RunnerError, match="cannot go to this"):
            runner.picture_tokens(4000, 3)
    else:
        assert not pictures.kind.mrope and any(token >= pictures.base for token in ids)


def test_a_vision_kind_not_handled_is_refused_at_load(tmp_path: Path) -> None:
    config = config_only(tmp_path / "tiny-qwen3-vl", "qwen3_vl")
    with pytest.raises(RunnerError, match=r"does not read pictures for 'qwen3_vl' models yet \(it does for LLaVA"):
        HfRunner.load(config, lambda fraction, message: None, lambda: False)


def test_a_kind_whose_processor_needs_a_missing_package_says_which(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.runners.hf.vision_kinds as kinds

    monkeypatch.setattr(kinds, "installed", lambda package: package != "num2words")
    config = config_only(tmp_path / "tiny-smolvlm", "smolvlm")
    with pytest.raises(RunnerError, match=r"SmolVLM pictures only with the num2words package: pip install num2words"):
        HfRunner.load(config, lambda fraction, message: None, lambda: False)


def test_gemma3_pictures_keep_off_flash_attn_under_auto() -> None:
    gemma = {"model_type": "gemma3", "vision_config": {}}
    assert attention_for(gemma, "flash_attention_2", "auto") == "sdpa"
    assert attention_for(gemma, "flash_attention_2", "on") == "flash_attention_2"  # steps with pictures refuse
    assert attention_for({"model_type": "qwen2_vl", "vision_config": {}}, "flash_attention_2", "auto") == \
        "flash_attention_2"
    assert attention_for({"model_type": "gemma3"}, "flash_attention_2", "auto") == "flash_attention_2"  # text only


def test_a_flash_attn_step_with_a_picture_is_planned_or_refused(runner: HfRunner) -> None:
    """flash-attn's packed plan (a GPU's): positions as on the CPU; Gemma 3's pictures refused with a sentence."""
    ids = runner.tokenize(runner.render_chat(CHATS["one picture"]))
    work = [SlotWork(0, ids, 0, True), SlotWork(1, [5, 6, 7], 0, True)]
    pictures = runner._pictures
    assert pictures is not None
    runner.clear_slot(0)
    runner.clear_slot(1)
    if pictures.kind.picture_sees_itself:
        with pytest.raises(RunnerError, match="set Flash attention to off"):
            runner._steps.build(work, torch.device("cpu"), varlen=True)
        return
    plan = runner._steps.build(work, torch.device("cpu"), varlen=True)
    assert plan.mask is None and plan.flash_kwargs["cu_seq_lens_q"].tolist() == [0, len(ids), len(ids) + 3]
    expected = runner._steps.build(work, torch.device("cpu"), varlen=False).position_ids
    assert torch.equal(plan.position_ids, expected)
