"""`check_server`: is there an OpenAI-compatible server at this URL, does it take the key, which models does it serve.

One `GET /v1/models`, timed. Used by the Settings dialog's "Test connection"
(off the GUI thread) and by the engine when it connects; the verdict is a
sentence a person can act on (errors.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx2

from engine.remote.errors import base_url, endpoint, explain_status, explain_transport, headers, looks_like_html


@dataclass(frozen=True)
class RemoteModel:
    id: str
    context_length: int = 0  # 0: the server did not say
    sees: bool | None = None  # takes pictures: as its listed capabilities say; None: the server does not say


@dataclass(frozen=True)
class ServerCheck:
    ok: bool
    message: str  # for a person: "Connected to ...: 2 models" or what is wrong
    models: tuple[RemoteModel, ...] = ()
    latency_ms: float = 0.0
    status: int = 0  # HTTP status when one came back

    @property
    def model_ids(self) -> tuple[str, ...]:
        return tuple(model.id for model in self.models)


def check_server(url: str, api_key: str = "", timeout_s: float = 10.0) -> ServerCheck:
    if not base_url(url):
        return ServerCheck(False, "Enter the server's URL, for example http://192.168.1.20:8000/v1.")
    started = time.perf_counter()
    try:
        with httpx2.Client(timeout=httpx2.Timeout(timeout_s), follow_redirects=True) as client:
            response = client.get(endpoint(url, "models"), headers=headers(api_key))
    except httpx2.HTTPError as error:
        return ServerCheck(False, explain_transport(error, url))
    except ValueError as error:  # a URL httpx cannot even parse
        return ServerCheck(False, f"{url!r} is not a usable server address ({error}); it looks like http://host:8000.")
    latency_ms = (time.perf_counter() - started) * 1000
    content_type, body = response.headers.get("content-type", ""), response.text
    if response.status_code != 200:
        return ServerCheck(False, explain_status(response.status_code, content_type, body, url),
                           latency_ms=latency_ms, status=response.status_code)
    if looks_like_html(content_type, body):  # a router's login page, a web UI on the API's port
        return ServerCheck(False, explain_status(200, content_type, body, url), latency_ms=latency_ms, status=200)
    models = _models(response)
    if models is None:
        return ServerCheck(False, f"{base_url(url)} answered, but not as an OpenAI-compatible server would "
                                  f"(GET /v1/models gave no model list). Check the URL.",
                           latency_ms=latency_ms, status=200)
    names = ", ".join(model.id for model in models[:5]) + (" …" if len(models) > 5 else "")
    message = (f"Connected to {base_url(url)} in {latency_ms:.0f} ms: {len(models)} model"
               f"{'' if len(models) == 1 else 's'} ({names or 'none listed'}).")
    return ServerCheck(True, message, tuple(models), latency_ms, 200)


def _models(response: httpx2.Response) -> list[RemoteModel] | None:
    try:
        data = response.json()
    except ValueError:
        return None
    listed = data.get("data") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return None
    return [RemoteModel(str(item["id"]), _context_length(item), _sees(item)) for item in listed
            if isinstance(item, dict) and item.get("id")]


def _sees(item: dict[str, object]) -> bool | None:
    """Hearth's list names capabilities ("vision") and LM Studio's native one a type ("vlm"); OpenAI's shape, which
    vLLM, llama-server and Ollama answer, says nothing (None)."""
    capabilities = item.get("capabilities")
    if isinstance(capabilities, list):
        return "vision" in capabilities
    kind = item.get("type")
    return kind == "vlm" if kind in ("llm", "vlm") else None


def _context_length(item: dict[str, object]) -> int:
    """vLLM says max_model_len; llama-cpp-python's server meta.n_ctx_train; others nothing."""
    meta = item.get("meta")
    for value in (item.get("max_model_len"), item.get("context_length"),
                  meta.get("n_ctx_train") if isinstance(meta, dict) else None):
        if isinstance(value, int) and value > 0:
            return value
    return 0
