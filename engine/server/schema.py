"""Requests, checked: OpenAI's fields onto the engine's Submit, and a clear 400 for what would change the answer.

Pydantic checks the types (strictly: "0.5" is not a number); what the engine
cannot do (n > 1, logit_bias, echo, audio...) is refused here with the field
named, never silently ignored. Fields that change nothing (user, store,
metadata...) and fields we do not know are ignored. Tools, response formats and
tool messages become the engine's types in chat_mapping.py.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.images import ImageError, from_url
from engine.protocol import Constraint, ImagePart, SamplingParams
from engine.server.errors import ApiError

MAX_STOP_STRINGS = 16
MAX_TOP_LOGPROBS = 20
Role = Literal["system", "developer", "user", "assistant", "tool", "function"]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")


class TextPart(_Strict):
    type: str
    text: str | None = None
    image_url: Any = None  # {"url": "data:image/png;base64,..."} (an image_url part)


class FunctionCall(_Strict):
    name: str
    arguments: str = "{}"


class ToolCallIn(_Strict):
    """A call an earlier assistant message made, as the client sends it back."""

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(_Strict):
    role: Role
    content: Union[str, list[TextPart], None] = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    reasoning_content: str | None = None  # llama-server's and DeepSeek's name for the thinking


class FunctionDefinition(_Strict):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(_Strict):
    type: str  # "function", or one of the server's own tools ({"type": "web_search"}: engine/server/web_tools.py)
    function: FunctionDefinition | None = None


class JsonSchemaFormat(_Strict):
    model_config = ConfigDict(strict=True, extra="allow", populate_by_name=True)
    name: str = "answer"
    description: str | None = None
    schema_: Any = Field(default=None, alias="schema")
    strict: bool | None = None


class StreamOptions(_Strict):
    include_usage: bool = False


class ResponseFormat(_Strict):
    type: Literal["text", "json_object", "json_schema"] = "text"
    json_schema: JsonSchemaFormat | None = None


class _Common(_Strict):
    """The sampling fields chat and plain completions share."""

    model: str | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    top_k: int | None = Field(default=None, ge=0)
    min_p: float | None = Field(default=None, ge=0.0, le=1.0)
    repeat_penalty: float | None = Field(default=None, gt=0.0, le=10.0)
    presence_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    frequency_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    seed: int | None = None
    stop: Union[str, list[str], None] = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = Field(default=1, ge=1)
    logit_bias: dict[str, Any] | None = None
    ignore_eos: bool = False  # llama-server's extension: run to max_tokens (benchmarks)
    grammar: str | None = None  # llama-server's extension: a GBNF grammar the answer must match


class ChatRequest(_Common):
    messages: list[Message] = Field(min_length=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    logprobs: bool | None = None
    top_logprobs: int | None = Field(default=None, ge=0, le=MAX_TOP_LOGPROBS)
    tools: list[Tool] | None = None
    tool_choice: Union[str, dict[str, Any], None] = None
    parallel_tool_calls: bool | None = None
    functions: list[Any] | None = None
    function_call: Any = None
    response_format: ResponseFormat | None = None
    modalities: list[str] | None = None
    audio: Any = None
    prediction: Any = None
    chat_template_kwargs: dict[str, Any] | None = None  # llama-server's and vLLM's: variables for the template
    reasoning_effort: str | None = None
    reasoning_budget: int | None = Field(default=None, ge=-1)  # llama-server's: -1 no limit, 0 no thinking


class CompletionRequest(_Common):
    prompt: Union[str, list[str]]
    echo: bool = False
    suffix: str | None = None
    best_of: int | None = None
    logprobs: int | None = Field(default=None, ge=0, le=MAX_TOP_LOGPROBS)


def parse(model: type[_Strict], body: Any) -> Any:
    """The request as `model`, or a 400 naming the first field that is wrong."""
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object.")
    try:
        return model.model_validate(body)
    except ValidationError as error:
        first = error.errors()[0]
        param = _param_name(first.get("loc", ()))
        raise ApiError(400, f"Invalid value for '{param}': {first.get('msg', 'not valid')}.", param=param) from None


def _param_name(location: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in location:
        if isinstance(item, int):
            parts[-1:] = [f"{parts[-1]}[{item}]"] if parts else [f"[{item}]"]
        elif item not in ("str", "list[TextPart]", "list[str]", "none", "function-after"):
            parts.append(str(item))
    return ".".join(parts) or "body"


def _refuse(param: str, what: str) -> ApiError:
    return ApiError(400, f"'{param}': {what} is not supported by this server.", param=param, code="unsupported_parameter")


def check_common(request: _Common) -> None:
    if request.n != 1:
        raise _refuse("n", "more than one choice per request")
    if request.logit_bias:
        raise _refuse("logit_bias", "logit bias")
    stops = [request.stop] if isinstance(request.stop, str) else request.stop or []
    if len(stops) > MAX_STOP_STRINGS:
        raise ApiError(400, f"'stop' takes at most {MAX_STOP_STRINGS} strings.", param="stop")


def check_chat(request: ChatRequest) -> None:
    check_common(request)
    if request.top_logprobs and not request.logprobs:
        raise ApiError(400, "'top_logprobs' needs 'logprobs': true.", param="top_logprobs")
    for name, instead in (("functions", "tools"), ("function_call", "tool_choice")):
        if getattr(request, name) not in (None, [], "none"):
            raise _refuse(name, f"the old '{name}' field (send '{instead}')")
    for name in ("audio", "prediction"):
        if getattr(request, name) is not None:
            raise _refuse(name, name)
    if request.modalities and request.modalities != ["text"]:
        raise _refuse("modalities", "output other than text")
    if request.grammar and request.response_format and request.response_format.type != "text":
        raise ApiError(400, "'grammar': give a grammar or a response_format, not both.", param="grammar")


def check_completion(request: CompletionRequest) -> None:
    check_common(request)
    if isinstance(request.prompt, list) and len(request.prompt) != 1:
        raise _refuse("prompt", "a batch of several prompts (send one request each)")
    if request.echo:
        raise _refuse("echo", "echoing the prompt")
    if request.suffix:
        raise _refuse("suffix", "a suffix (fill in the middle)")
    if request.best_of not in (None, 1):
        raise _refuse("best_of", "best_of")


def text_of(content: str | list[TextPart] | None, param: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        if part.type == "image_url":
            continue  # images_of reads it
        if part.type != "text" or part.text is None:
            raise _refuse(param, f"a content part of type {part.type!r} (text and image_url are read)")
        texts.append(part.text)
    return "".join(texts)


def images_of(content: str | list[TextPart] | None, param: str) -> tuple[ImagePart, ...]:
    """The pictures of a message's image_url parts (data: URLs only: nothing is fetched for anyone)."""
    if not isinstance(content, list):
        return ()
    images = []
    for number, part in enumerate(content):
        if part.type != "image_url":
            continue
        where = f"{param}[{number}].image_url"
        url = part.image_url.get("url") if isinstance(part.image_url, dict) else part.image_url
        if not isinstance(url, str):
            raise ApiError(400, f"'{where}': an image_url part is {{\"url\": \"data:image/png;base64,...\"}}.", param=where)
        images.append(picture_at(url, where))
    return tuple(images)


def picture_at(url: str, where: str) -> ImagePart:
    """A data: URL's picture, or the 400 that names `where` (every API's image parts)."""
    try:
        return from_url(url)
    except ImageError as error:
        raise ApiError(400, f"'{where}': {error}.", param=where, code="invalid_image") from error


def completion_prompt(request: CompletionRequest) -> str:
    return request.prompt if isinstance(request.prompt, str) else request.prompt[0]


def sampling(request: _Common, context_length: int, constraint: Constraint | None = None,
             logprobs: int | None = None, reasoning_budget: int | None = None) -> SamplingParams:
    """The engine's defaults, overridden by what the request gives; no max_tokens: until the context is full."""
    limit = getattr(request, "max_completion_tokens", None) or request.max_tokens or context_length
    stops = (request.stop,) if isinstance(request.stop, str) else tuple(request.stop or ())
    given: dict[str, Any] = {name: getattr(request, name) for name in (
        "temperature", "top_p", "top_k", "min_p", "repeat_penalty", "presence_penalty", "frequency_penalty", "seed")}
    # OpenAI's API has no repeat penalty (llama-server's is off by default): a client that names none gets none.
    given["repeat_penalty"] = given["repeat_penalty"] or 1.0
    return SamplingParams(**{k: v for k, v in given.items() if v is not None},
                          max_new_tokens=limit, stop=tuple(s for s in stops if s), ignore_eos=request.ignore_eos,
                          constraint=constraint, logprobs=logprobs, reasoning_budget=reasoning_budget)
