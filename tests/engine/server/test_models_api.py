"""Several models through the API, with the real openai client: the library in /v1/models, a request naming a
model that is not loaded loads it, aliases, keep_alive, /v1/models/{id}/load and /unload, unknown names."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from engine.catalog.model_files import known_name
from engine.clients import EngineHost
from engine.protocol import ModelConfig, ModelLoaded, ModelUnloaded
from engine.server import ApiServer, ServerOptions
from tests.engine.server.conftest import Tap, load
from tests.engine.server.test_bad_requests import assert_openai_error, call

SHORT = {"max_tokens": 6, "temperature": 0}
HELLO = [{"role": "user", "content": "Hello"}]


@pytest.fixture(scope="module")
def models_dir(requantized_model: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("models")
    shutil.copy(requantized_model, folder / Path(requantized_model).name)
    return folder


@pytest.fixture(scope="module")
def served(default_model: str, models_dir: Path) -> Iterator[tuple[ApiServer, Tap, str]]:
    host = EngineHost(stats_interval_s=0.2)
    host.start()
    tap = Tap()
    remove = host.add_tap(tap)
    load(host, ModelConfig(path=default_model, context_length=512, slots=2, threads=1))
    second = known_name(next(models_dir.glob("*.gguf")))
    options = ServerOptions(port=0, models_dir=str(models_dir), aliases=(("gpt-4o", second),),
                            load_defaults=ModelConfig(path="", context_length=512, slots=2, threads=1))
    api = ApiServer(host, options)
    api.start()
    yield api, tap, second
    api.stop()
    remove()
    host.shutdown()


@pytest.fixture
def client(served: tuple[ApiServer, Tap, str]) -> Iterator[Any]:
    import openai

    with openai.OpenAI(base_url=served[0].url, api_key="unused", max_retries=0, timeout=120) as api:
        yield api


def listed(client: Any) -> dict[str, bool]:
    return {model.id: model.model_extra["loaded"] for model in client.models.list()}


def test_a_request_naming_a_library_model_loads_it_and_it_answers(served: tuple[ApiServer, Tap, str],
                                                                  client: Any, default_model: str) -> None:
    server, tap, second = served
    first = known_name(default_model)
    call(server.port, "POST", f"/v1/models/{second}/unload")  # as a fresh server has it, whatever ran before
    assert listed(client) == {first: True, second: False}
    mark = len(tap.records)
    answer = client.chat.completions.create(model=second, messages=HELLO, **SHORT)
    assert answer.model == second and answer.choices[0].message.content and answer.usage.completion_tokens == 6
    loaded = [m for k, m, _, _ in tap.records[mark:] if k == "event" and isinstance(m, ModelLoaded)]
    assert [Path(m.info.path).name for m in loaded] == [f"{second}.gguf"]
    assert listed(client) == {first: True, second: True}
    # no model: the model loaded last; a model by its own name, the first one still loaded
    assert client.chat.completions.create(messages=HELLO, model="", **SHORT).model == second
    assert client.chat.completions.create(model=first, messages=HELLO, **SHORT).model == first
    assert client.chat.completions.create(model="gpt-4o", messages=HELLO, **SHORT).model == second  # the alias


def test_an_unknown_name_is_a_404_that_lists_the_ids(served: tuple[ApiServer, Tap, str], default_model: str) -> None:
    import openai

    server, _, second = served
    with openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0) as api:
        with pytest.raises(openai.NotFoundError) as error:
            api.chat.completions.create(model="llama-9000", messages=HELLO, **SHORT)
    message = error.value.body["message"]  # type: ignore[index]
    assert message.startswith("The model 'llama-9000' does not exist here: this server has ")
    assert f"'{known_name(default_model)}'" in message and f"'{second}'" in message
    status, _, body = call(server.port, "POST", "/v1/models/llama-9000/load")
    assert status == 404 and "llama-9000" in assert_openai_error(body, "not_found_error", "model")


def test_load_and_unload_endpoints_answer_when_done(served: tuple[ApiServer, Tap, str], client: Any) -> None:
    server, tap, second = served
    assert call(server.port, "POST", f"/v1/models/{second}/load")[2] == {"id": second, "object": "model", "loaded": True}
    mark = len(tap.records)
    assert call(server.port, "POST", f"/v1/models/{second}/unload")[2] == {"id": second, "object": "model",
                                                                           "loaded": False}
    unloaded = [m for k, m, _, _ in tap.records[mark:] if k == "event" and isinstance(m, ModelUnloaded)]
    assert [(Path(m.path).name, m.reason) for m in unloaded] == [(f"{second}.gguf", "request")]
    assert listed(client)[second] is False
    assert call(server.port, "POST", f"/v1/models/{second}/load", {"keep_alive": "nonsense"})[0] == 400
    status, _, body = call(server.port, "POST", f"/v1/models/{second}/load", {"ttl": 300})
    assert (status, body["loaded"], listed(client)[second]) == (200, True, True)


def test_keep_alive_zero_unloads_the_model_after_the_request(served: tuple[ApiServer, Tap, str], client: Any) -> None:
    server, tap, second = served
    mark = len(tap.records)
    answer = client.chat.completions.create(model=second, messages=HELLO, extra_body={"keep_alive": 0}, **SHORT)
    assert answer.model == second
    _, event, _, _ = tap.wait(lambda kind, m: kind == "event" and isinstance(m, ModelUnloaded), after=mark)
    assert isinstance(event, ModelUnloaded) and event.reason == "request" and Path(event.path).name == f"{second}.gguf"
    assert listed(client)[second] is False
