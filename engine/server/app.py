"""The Starlette app: /health, /v1/models, /v1/chat/completions, /v1/completions, and the other APIs' routes.

Every answer that is not a success has OpenAI's error shape (Anthropic's under
/v1/messages), including unknown paths, wrong methods and the server's own bugs
(a 500 that leaves the server running). The Gate in front checks the Host header (a web page that rebinds
its name to 127.0.0.1 is turned away), the Origin of browser requests (none
allowed unless listed: CORS), and the API key.
"""

from __future__ import annotations

import hmac
import logging
import time
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, AsyncIterator, Callable

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from engine.images import can_see, cannot_see
from engine.protocol import Embed, ModelInfo, Submit
from engine.server import schema
from engine.server.anthropic_reply import MessageReply
from engine.server.anthropic_request import MessagesRequest, messages_submit
from engine.server.bodies import read_json
from engine.server.chat_mapping import chat_submit, completion_submit, server_tool_names
from engine.server.embeddings import EmbeddingsRequest, embeddings_body, texts_of
from engine.server.errors import ApiError, anthropic_error_body, anthropic_shaped, error_body
from engine.server.library import model_id
from engine.server.model_routes import ModelRoutes, keep_alive_of
from engine.server.options import ServerOptions, is_loopback
from engine.server.responses import Reply
from engine.server.responses_api_reply import ResponseReply
from engine.server.responses_api_request import ResponsesRequest, responses_server_tools, responses_submit
from engine.server.streams import Encoder, TurnResponse, TurnStream
from engine.server.tool_loop import ToolLoopTurn
from engine.server.turns import RETRY_AFTER_S, AnswerTurn, TurnDesk, new_chat_id
from engine.server.voice_routes import VoiceRoutes
from engine.server.web_tools import ServerToolRan

log = logging.getLogger(__name__)
PUBLIC_PATHS = ("/health",)


class Gate:
    """Host, Origin and API key, checked before any route runs."""

    def __init__(self, app: ASGIApp, options: ServerOptions) -> None:
        self.app, self.options = app, options
        self._origins = {origin.rstrip("/") for origin in options.cors_origins}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            error = self._refusal(scope, Headers(scope=scope))
            if error is not None:
                await error.response(anthropic_shaped(scope["path"]))(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope, headers: Headers) -> ApiError | None:
        host = _host_name(headers.get("host", ""))
        if is_loopback(self.options.host) and host and not is_loopback(host):
            return ApiError(403, f"This server answers requests to this computer only, not to {host!r}.")
        origin = headers.get("origin")
        if origin is not None and "*" not in self._origins and origin.rstrip("/") not in self._origins:
            return ApiError(403, f"Web pages from {origin} may not use this server: add the origin to the "
                            "allowed CORS origins.", code="origin_not_allowed")
        if self.options.api_key and scope["path"] not in PUBLIC_PATHS and scope["method"] != "OPTIONS":
            if not hmac.compare_digest(_key_given(headers).encode(), self.options.api_key.encode()):
                return ApiError(401, "Missing or wrong API key: send it as 'Authorization: Bearer KEY' or "
                                "'X-Api-Key: KEY'.", code="invalid_api_key")
        return None


def _host_name(header: str) -> str:
    """The name in a Host header, without its port: "localhost:8642" -> "localhost", "[::1]:80" -> "[::1]"."""
    if header.startswith("["):
        return header.split("]", 1)[0] + "]"
    return header.rsplit(":", 1)[0]


def _key_given(headers: Headers) -> str:
    authorization = headers.get("authorization", "")
    if authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return headers.get("x-api-key", "").strip()


class Routes:
    """The handlers, over one TurnDesk."""

    def __init__(self, desk: TurnDesk, options: ServerOptions) -> None:
        self.desk, self.options = desk, options
        self.started = int(time.time())
        self.models = ModelRoutes(desk, options, self.started)

    async def health(self, request: Request) -> Response:
        info = self.desk.host.model_info
        if info is None:
            loading = self.desk.host.loading
            raise ApiError(503, "The model is loading." if loading else "No model is loaded.",
                           code="model_loading" if loading else "model_not_loaded", retry_after_s=RETRY_AFTER_S)
        return JSONResponse({"status": "ok", "model": model_id(info), "in_flight": self.desk.in_flight})

    async def chat(self, request: Request) -> Response:
        raw = await read_json(request, self.options.max_body_bytes)
        body = schema.parse(schema.ChatRequest, raw)
        schema.check_chat(body)
        info, keep_alive_s = await self.model(body.model, raw)
        server_tools = self.options.server_tools
        submit = chat_submit(new_chat_id(), body, info.context_length, server_tools)
        reply = Reply("chat", model_id(info), include_usage=_usage_asked(body))
        return await self.answer(self.routed(submit, info, keep_alive_s), reply, body.stream,
                                 server_tool_names(body, server_tools), reply.record_step)

    async def completion(self, request: Request) -> Response:
        raw = await read_json(request, self.options.max_body_bytes)
        body = schema.parse(schema.CompletionRequest, raw)
        schema.check_completion(body)
        info, keep_alive_s = await self.model(body.model, raw)
        submit = completion_submit(new_chat_id(), body, info.context_length)
        reply = Reply("completion", model_id(info), include_usage=_usage_asked(body),
                      text_offset=len(submit.prompt or ""))
        return await self.answer(self.routed(submit, info, keep_alive_s), reply, body.stream)

    async def messages(self, request: Request) -> Response:
        """Anthropic's Messages API. Its clients name Claude models: a name that matches nothing here (no model,
        no alias) gets the model loaded last."""
        raw = await read_json(request, self.options.max_body_bytes)
        body = schema.parse(MessagesRequest, raw)
        info, keep_alive_s = await self.model(body.model, raw, any_name=True)
        submit = self.routed(messages_submit(new_chat_id(), body), info, keep_alive_s)
        return await self.answer(submit, MessageReply(model_id(info), tuple(body.stop_sequences or ())), body.stream)

    async def responses(self, request: Request) -> Response:
        raw = await read_json(request, self.options.max_body_bytes)
        body = schema.parse(ResponsesRequest, raw)
        info, keep_alive_s = await self.model(body.model, raw)
        server_tools = self.options.server_tools
        submit = self.routed(responses_submit(new_chat_id(), body, info.context_length, server_tools), info,
                             keep_alive_s)
        echo = {"instructions": body.instructions, "max_output_tokens": body.max_output_tokens,
                "temperature": body.temperature, "top_p": body.top_p,
                "parallel_tool_calls": submit.parallel_tool_calls,
                "tools": [tool.model_dump(by_alias=True, exclude_none=True) for tool in body.tools or ()],
                "tool_choice": body.tool_choice or "auto",
                "text": body.text.model_dump(by_alias=True, exclude_none=True) if body.text else {"format": {"type": "text"}}}
        if body.top_logprobs is not None:
            echo["top_logprobs"] = body.top_logprobs
        reply = ResponseReply(model_id(info), echo, logprobs=submit.sampling.logprobs is not None)
        return await self.answer(submit, reply, body.stream, responses_server_tools(body, server_tools),
                                 reply.record_step)

    async def embeddings(self, request: Request) -> Response:
        raw = await read_json(request, self.options.max_body_bytes)
        body = schema.parse(EmbeddingsRequest, raw)
        texts = texts_of(body)
        info, _ = await self.model(body.model, raw)
        answer = await self.desk.embed(Embed(new_chat_id(), texts, model=info.path))
        return JSONResponse(embeddings_body(answer, model_id(info), body.encoding_format))

    async def model(self, requested: str | None, raw: Any, any_name: bool = False) -> tuple[ModelInfo, float | None]:
        """The model that answers (loaded first where the request names one that is not) and the request's
        keep-alive."""
        keep_alive_s = keep_alive_of(raw)
        return await self.models.model(requested, keep_alive_s, any_name), keep_alive_s

    @staticmethod
    def routed(submit: Submit, info: ModelInfo, keep_alive_s: float | None) -> Submit:
        if any(message.images for message in submit.messages) and not can_see(info):
            raise ApiError(400, f"{cannot_see(info)}.", param="messages", code="model_cannot_see")
        return replace(submit, model=info.path, keep_alive_s=keep_alive_s)

    async def answer(self, submit: Submit, encoder: Encoder, stream: bool, run_here: tuple[str, ...] = (),
                     on_step: Callable[[ServerToolRan], None] = lambda step: None) -> Response:
        """The one engine path of every API: the turn goes in as a Submit, the encoder spells the answer.
        `run_here`: the server's own tools the request asked for; their calls are run here, round after round."""
        first = await self.desk.open(submit)
        turn: AnswerTurn = first
        if run_here:
            tools = self.options.server_tools
            asked = replace(tools, tools=tuple(tool for tool in tools.tools if tool.name in run_here))
            turn = ToolLoopTurn(first, self.desk, asked, on_step)
        return TurnStream(turn, self.desk, encoder) if stream else TurnResponse(turn, self.desk, encoder)


def _usage_asked(body: schema.ChatRequest | schema.CompletionRequest) -> bool:
    return bool(body.stream and body.stream_options and body.stream_options.include_usage)


# ---------------------------------------------------------------- errors


async def _api_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, ApiError)
    return error.response(anthropic_shaped(request.url.path))


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    message = {404: f"There is no {request.url.path} here. This server has: {endpoints(request.app)}.",
               405: f"{request.method} is not allowed on {request.url.path}."}.get(error.status_code, str(error.detail))
    return _error_json(request, error.status_code, message)


def endpoints(app: Starlette) -> str:
    """ "GET /health, POST /v1/chat/completions, ...": every route the app has, as it has them."""
    found = []
    for route in app.routes:
        path = getattr(route, "path", "")
        methods = sorted(set(getattr(route, "methods", None) or ()) - {"HEAD"})
        if path:
            found.append(f"{'/'.join(methods)} {path}".strip())
    return ", ".join(found)


async def _server_error(request: Request, error: Exception) -> Response:
    log.exception("the API failed on %s %s", request.method, request.url.path, exc_info=error)
    return _error_json(request, 500, f"The server failed on this request: {error}")


def _error_json(request: Request, status: int, message: str) -> Response:
    body = anthropic_error_body(status, message) if anthropic_shaped(request.url.path) else error_body(status, message)
    return JSONResponse(body, status_code=status)


def build_app(desk: TurnDesk, options: ServerOptions, on_startup: Callable[[], None] | None = None) -> Starlette:
    routes = Routes(desk, options)
    voice = VoiceRoutes(options)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if on_startup is not None:
            on_startup()
        try:
            yield
        finally:
            voice.close()

    middleware = [Middleware(Gate, options=options)]
    if options.cors_origins:  # outermost: a browser's preflight is answered before the key is asked
        middleware.insert(0, Middleware(CORSMiddleware, allow_origins=list(options.cors_origins),
                                        allow_methods=["GET", "POST", "OPTIONS"],
                                        allow_headers=["Authorization", "Content-Type", "X-Api-Key"]))
    app = Starlette(
        routes=[Route("/health", routes.health, methods=["GET"]),
                Route("/v1/models", routes.models.models, methods=["GET"]),
                Route("/v1/models/{model_id:path}/load", routes.models.load, methods=["POST"]),
                Route("/v1/models/{model_id:path}/unload", routes.models.unload, methods=["POST"]),
                Route("/v1/chat/completions", routes.chat, methods=["POST"]),
                Route("/v1/completions", routes.completion, methods=["POST"]),
                Route("/v1/messages", routes.messages, methods=["POST"]),
                Route("/v1/responses", routes.responses, methods=["POST"]),
                Route("/v1/embeddings", routes.embeddings, methods=["POST"]),
                Route("/v1/audio/transcriptions", voice.transcriptions, methods=["POST"]),
                Route("/v1/audio/speech", voice.speech, methods=["POST"])],
        middleware=middleware,
        exception_handlers={ApiError: _api_error, HTTPException: _http_error, Exception: _server_error},
        lifespan=lifespan)
    app.state.voice = voice
    return app
