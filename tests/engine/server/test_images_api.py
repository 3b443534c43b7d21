"""Pictures through the API, with the real openai and anthropic clients against the real server on 127.0.0.1:
data: URLs and base64 blocks reach a tiny LLaVA; http URLs and a model that cannot see get a clear 400."""

from __future__ import annotations

import base64
from typing import Any, Iterator

import pytest

pytest.importorskip("transformers")
pytest.importorskip("PIL")

from engine.clients import EngineHost  # noqa: E402
from engine.protocol import ModelConfig  # noqa: E402
from engine.server import ApiServer, ServerOptions  # noqa: E402
from tests.engine.runners.hf.tiny_vision import IMAGE_TOKENS, picture  # noqa: E402
from tests.engine.server.conftest import load  # noqa: E402

pytestmark = pytest.mark.hf

PNG, JPEG, WEBP = picture((200, 20, 20)), picture((20, 20, 200), kind="JPEG"), picture((20, 200, 20), kind="WEBP")
QUESTION = "What colour is it?"


@pytest.fixture(scope="module")
def server(vision_model: str, tiny_model: str) -> Iterator[ApiServer]:
    host = EngineHost(stats_interval_s=0.2)
    host.start()
    for path in (tiny_model, vision_model):
        load(host, ModelConfig(path=path, backend="hf", context_length=256, slots=4, device="cpu"))
    api = ApiServer(host, ServerOptions(port=0, max_waiting=8))
    api.start()
    yield api
    api.stop()
    host.shutdown()


@pytest.fixture
def client(server: ApiServer) -> Iterator[Any]:
    import openai

    with openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=120) as api:
        yield api


@pytest.fixture
def claude(server: ApiServer) -> Iterator[Any]:
    import anthropic

    with anthropic.Anthropic(base_url=server.url[: -len("/v1")], api_key="unused", max_retries=0, timeout=120) as api:
        yield api


def data_url(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def ask(client: Any, *urls: str, model: str = "tiny-llava", **options: Any) -> Any:
    content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": url}} for url in urls]
    content.append({"type": "text", "text": QUESTION})
    return client.chat.completions.create(model=model, messages=[{"role": "user", "content": content}],
                                          max_tokens=4, temperature=0, **options)


def test_the_models_list_says_which_can_see(client: Any) -> None:
    import json

    listed = {m.id: m for m in client.models.list().data}
    assert "vision" in json.dumps(listed["tiny-llava"].model_dump())
    assert "vision" not in json.dumps(listed["tiny-llama"].model_dump())


@pytest.mark.parametrize(("data", "mime"), [(PNG, "image/png"), (JPEG, "image/jpeg"), (WEBP, "image/webp")])
def test_a_data_url_picture_reaches_the_model(client: Any, data: bytes, mime: str) -> None:
    plain = ask(client)
    seen = ask(client, data_url(data, mime))
    assert seen.usage.prompt_tokens == plain.usage.prompt_tokens + IMAGE_TOKENS
    assert ask(client, data_url(data, mime), data_url(PNG, "image/png")).usage.prompt_tokens == (
        plain.usage.prompt_tokens + 2 * IMAGE_TOKENS)


def test_the_answer_streams(client: Any) -> None:
    chunks = list(ask(client, data_url(PNG, "image/png"), stream=True, stream_options={"include_usage": True}))
    texts = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert texts and chunks[-1].usage.completion_tokens == 4


def test_an_http_url_is_refused_not_fetched(client: Any) -> None:
    import openai

    with pytest.raises(openai.BadRequestError) as error:
        ask(client, "https://example.com/cat.png")
    assert "not fetched" in str(error.value) and "messages[0].content[0].image_url" in str(error.value)


def test_bytes_that_are_no_picture_are_refused(client: Any) -> None:
    import openai

    with pytest.raises(openai.BadRequestError, match="not a PNG, JPEG or WebP"):
        ask(client, data_url(b"GIF89a not ours", "image/png"))


def test_a_model_that_cannot_see_says_so(client: Any) -> None:
    import openai

    with pytest.raises(openai.BadRequestError) as error:
        ask(client, data_url(PNG, "image/png"), model="tiny-llama")
    assert "cannot see images" in str(error.value) and "tiny-llama" in str(error.value)


def test_anthropic_image_blocks_reach_the_model(claude: Any) -> None:
    def asked(*images: bytes, model: str = "tiny-llava") -> Any:
        blocks: list[dict[str, Any]] = [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                        "data": base64.b64encode(i).decode()}}
                                        for i in images]
        return claude.messages.create(model=model, max_tokens=4, messages=[
            {"role": "user", "content": [*blocks, {"type": "text", "text": QUESTION}]}])

    def prompt_tokens(usage: Any) -> int:  # Anthropic counts the tokens read from the cache apart
        return int(usage.input_tokens + (usage.cache_read_input_tokens or 0))

    assert prompt_tokens(asked(PNG).usage) == prompt_tokens(asked().usage) + IMAGE_TOKENS
    import anthropic

    with pytest.raises(anthropic.BadRequestError, match="cannot see images"):
        asked(PNG, model="tiny-llama")
    with pytest.raises(anthropic.BadRequestError, match="not fetched"):
        claude.messages.create(model="tiny-llava", max_tokens=4, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}]}])


def test_responses_input_image_parts_reach_the_model(client: Any) -> None:
    import openai

    def asked(*parts: dict[str, Any], model: str = "tiny-llava") -> Any:
        return client.responses.create(model=model, max_output_tokens=4, temperature=0, input=[
            {"role": "user", "content": [*parts, {"type": "input_text", "text": QUESTION}]}])

    def image(url: str) -> dict[str, Any]:
        return {"type": "input_image", "image_url": url, "detail": "auto"}

    plain = asked().usage.input_tokens
    assert asked(image(data_url(JPEG, "image/jpeg"))).usage.input_tokens == plain + IMAGE_TOKENS
    assert asked(image(data_url(PNG, "image/png")), image(data_url(WEBP, "image/webp"))).usage.input_tokens == (
        plain + 2 * IMAGE_TOKENS)
    with pytest.raises(openai.BadRequestError) as error:
        asked(image("https://example.com/cat.png"))
    assert "not fetched" in str(error.value) and "input[0].content[0].image_url" in str(error.value)
    with pytest.raises(openai.BadRequestError, match="no stored files here"):
        asked({"type": "input_image", "file_id": "file-abc", "detail": "auto"})
    with pytest.raises(openai.BadRequestError, match="cannot see images"):
        asked(image(data_url(PNG, "image/png")), model="tiny-llama")
    with pytest.raises(openai.BadRequestError, match="only user messages carry images"):
        client.responses.create(model="tiny-llava", max_output_tokens=4, input=[
            {"role": "system", "content": [image(data_url(PNG, "image/png"))]},
            {"role": "user", "content": QUESTION}])


def test_the_remote_backend_sends_pictures_to_a_server_whose_model_sees(server: ApiServer) -> None:
    """Hearth's remote backend against this server: the model list says which model sees; a picture goes as an
    image_url part (its tokens are counted by the server), and a model listed as text-only is refused before."""
    from engine.protocol import ChatMessage, ImagePart, LoadModel, SamplingParams, Submit, TurnFinished
    from tests.engine.engine_harness import EngineHarness

    def ask(harness: EngineHarness, chat_id: str, *images: bytes) -> TurnFinished:
        mark = harness.mark()
        harness.loop.send(Submit(chat_id, (ChatMessage("user", QUESTION, images=tuple(ImagePart(i) for i in images)),),
                                 SamplingParams(temperature=0, max_new_tokens=3, ignore_eos=True)))
        return harness.finished(chat_id, mark)

    for model, sees in (("tiny-llava", True), ("tiny-llama", False)):
        harness = EngineHarness()
        try:
            harness.loop.send(LoadModel(ModelConfig(path=server.url, backend="remote", remote_model=model, slots=2)))
            loaded = harness.wait_loaded(timeout=60)
            assert ("vision" in loaded.info.capabilities) is sees
            if sees:
                plain, seen = ask(harness, "plain"), ask(harness, "seen", PNG, JPEG)
                assert plain.reason == seen.reason == "length", (plain.message, seen.message)
                assert seen.stats.prompt_tokens == plain.stats.prompt_tokens + 2 * IMAGE_TOKENS
            else:
                refused = ask(harness, "refused", PNG)
                assert refused.reason == "error" and refused.message == (
                    f"This model cannot see images: {server.url.removesuffix('/v1')} lists tiny-llama as taking no pictures")
        finally:
            harness.close()
