"""Pictures in the transformers runner, on a tiny LLaVA built in code: the image's embeddings go into the
chat's own packed sequence, match the model's own forward, and image chats batch with text chats."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("PIL")

from engine.protocol import ChatMessage, ImagePart, ModelConfig  # noqa: E402
from engine.runners.base import SlotWork  # noqa: E402
from engine.runners.hf.runner import HfRunner  # noqa: E402
from tests.engine.runners.hf.tiny_hf import drive, fresh  # noqa: E402
from tests.engine.runners.hf.tiny_vision import IMAGE_TOKENS, picture  # noqa: E402

pytestmark = pytest.mark.hf

RED = ImagePart(picture((200, 20, 20)), "image/png")
BLUE = ImagePart(picture((20, 20, 200), kind="JPEG"), "image/jpeg")
GREEN = ImagePart(picture((20, 200, 20), kind="WEBP"), "image/webp")


@pytest.fixture(scope="module")
def runner(vision_model: str) -> Iterator[HfRunner]:
    config = ModelConfig(path=vision_model, backend="hf", slots=4, context_length=256, batch_tokens=256, device="cpu")
    loaded = HfRunner.load(config, lambda fraction, message: None, lambda: False)
    yield loaded
    loaded.close()


def ids_of(runner: HfRunner, text: str, *images: ImagePart) -> list[int]:
    return runner.tokenize(runner.render_chat([ChatMessage("user", text, images=images)]))


def test_a_vision_model_says_it_can_see(runner: HfRunner) -> None:
    assert "vision" in runner.info.capabilities


def test_the_pictures_tokens_reach_the_sequence(runner: HfRunner) -> None:
    plain = ids_of(runner, "What is in the picture?")
    one = ids_of(runner, "What is in the picture?", RED)
    two = ids_of(runner, "What is in the picture?", RED, BLUE)
    assert len(one) == len(plain) + IMAGE_TOKENS and len(two) == len(plain) + 2 * IMAGE_TOKENS
    base = runner._pictures.base  # type: ignore[union-attr]
    assert sum(1 for i in two if i >= base) == 2 * IMAGE_TOKENS
    # the same bytes: the same ids (a later turn reuses the cache); other bytes: other ids
    assert ids_of(runner, "What is in the picture?", RED) == one
    assert [i for i in two if i >= base][:IMAGE_TOKENS] == [i for i in one if i >= base]
    assert set(i for i in two if i >= base).isdisjoint(set(ids_of(runner, "x", GREEN)) - set(range(base)))


def last_logits_alone(runner: HfRunner, tokens: list[int]) -> Any:
    fresh(runner, 0)
    runner.forward([SlotWork(0, tokens, 0, True)])
    return torch.from_numpy(runner.last_logits(0))


def test_the_runner_matches_the_models_own_forward_with_pixels(runner: HfRunner, vision_model: str) -> None:
    """The reference: the processor's input_ids and pixel_values through the model's own forward."""
    from PIL import Image
    import io

    tokens = ids_of(runner, "What colour?", RED)
    ours = last_logits_alone(runner, tokens)
    processor = runner._pictures.processor  # type: ignore[union-attr]
    text = runner.render_chat([ChatMessage("user", "<image>What colour?")])
    inputs = processor(text=text, images=[Image.open(io.BytesIO(RED.data)).convert("RGB")], return_tensors="pt",
                       add_special_tokens=False)
    assert inputs["input_ids"].shape[1] == len(tokens)
    with torch.inference_mode():
        reference = runner.model(**inputs, use_cache=False).logits[0, -1].float()
    assert torch.allclose(ours, reference, atol=1e-4), float((ours - reference).abs().max())
    # and the picture matters: another one moves the logits well beyond that tolerance
    other = last_logits_alone(runner, ids_of(runner, "What colour?", BLUE))
    assert float((other - ours).abs().max()) > 0.1


def test_two_image_chats_and_a_text_chat_run_in_one_step(runner: HfRunner) -> None:
    prompts = {0: ids_of(runner, "What colour?", RED), 1: ids_of(runner, "And this one?", BLUE),
               2: ids_of(runner, "Hello! How are you today?")}
    alone = {}
    for slot, tokens in prompts.items():
        alone[slot] = last_logits_alone(runner, tokens)
    fresh(runner, 0, 1, 2)
    calls: list[dict[str, Any]] = []
    forward = runner.model.forward

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return forward(*args, **kwargs)

    runner.model.forward = counted  # type: ignore[method-assign]
    try:
        runner.forward([SlotWork(slot, tokens, 0, True) for slot, tokens in prompts.items()])
    finally:
        del runner.model.forward
    assert len(calls) == 1  # one packed pass over all three chats
    embeds = calls[0]["inputs_embeds"]
    assert embeds.shape[1] == sum(len(tokens) for tokens in prompts.values())
    for slot in prompts:
        batched = torch.from_numpy(runner.last_logits(slot))
        assert torch.allclose(batched, alone[slot], atol=1e-4), (slot, float((batched - alone[slot]).abs().max()))


def test_image_chats_stream_beside_a_text_chat(runner: HfRunner) -> None:
    prompts = {0: ids_of(runner, "What colour?", RED), 1: ids_of(runner, "And this one?", BLUE),
               2: ids_of(runner, "Hello! How are you today?")}
    alone = {}
    for slot, tokens in prompts.items():
        fresh(runner, 0)
        alone[slot] = drive(runner, {0: tokens}, new_tokens=6)[0]
    fresh(runner, 0, 1, 2)
    together = drive(runner, prompts, new_tokens=6, chunk=12, delays={2: 1})
    assert together == alone
    assert all(len(tokens) == 6 for tokens in together.values())


def test_a_broken_picture_is_refused_with_a_sentence(runner: HfRunner) -> None:
    from engine.runners.base import RunnerError

    with pytest.raises(RunnerError, match="could not be read"):
        ids_of(runner, "What?", ImagePart(b"\x89PNG\r\n\x1a\nnot really", "image/png"))
