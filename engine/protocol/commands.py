"""What goes in through `EngineLoop.send`: load, unload, options, a turn, an embedding, cancel, close, shut down."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from engine.protocol.messages import ChatMessage, SamplingParams, ToolSpec
from engine.protocol.model import ModelConfig


@dataclass(frozen=True)
class LoadModel:
    """Load a model beside those already loaded (several models at once), or reload one.

    A model is known by its path (ModelConfig.path as given, the key of Submit.model, ModelLoaded.info.path).
    Loading a path that is loaded already replaces that model (its turns end: "the model was changed");
    other models stay. Room is made inside the memory budget by unloading the least recently used idle
    model that is not pinned; a load that cannot fit is refused (ModelLoadFailed) with the figures.
    `keep_alive_s`: how long the model stays loaded once idle; None takes the engine's default
    (EngineOptions), a negative value pins it (never unloaded for idleness or room), 0 unloads it as soon
    as its next turn ends.
    """

    config: ModelConfig
    keep_alive_s: float | None = None


@dataclass(frozen=True)
class UnloadModel:
    """Unload a model now (its turns end with a message); ModelUnloaded answers."""

    path: str


@dataclass(frozen=True)
class EngineOptions:
    """How the engine keeps several models: the memory they may use together and how long idle ones stay."""

    budget_bytes: int = 0  # 0: no budget (every load is tried)
    default_keep_alive_s: float = 15 * 60.0  # negative: forever
    max_loaded: int = 0  # 0: no cap on how many stay loaded (hearth-serve --max-loaded)


@dataclass(frozen=True)
class Submit:
    """Start one assistant turn for a chat: the whole conversation so far.

    `prompt`, when given, is fed as it is instead of the messages in the chat
    template: a plain completion, what base models need.
    """

    chat_id: str
    messages: tuple[ChatMessage, ...]
    sampling: SamplingParams = field(default_factory=SamplingParams)
    prompt: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    # "auto" (the model decides), "none", "required" (at least one call), or a tool's name (that call)
    tool_choice: str = "auto"
    parallel_tool_calls: bool = True
    # Extra variables for the chat template, as (name, JSON text) pairs: ("enable_thinking", "false"),
    # ("reasoning_effort", '"low"'), the API's chat_template_kwargs.
    template_options: tuple[tuple[str, str], ...] = ()
    # Which loaded model answers: its path (or its name, as /v1/models lists it); empty: the model loaded
    # last. A model being loaded: the turn waits for it (and ends with the load's error if it fails); with
    # nothing loaded yet, an empty name waits for the load under way. A model neither loaded nor being loaded
    # ends the turn with an error that says so.
    model: str = ""
    # This request's keep-alive for that model (the API's keep_alive / ttl), as LoadModel.keep_alive_s.
    keep_alive_s: float | None = None


@dataclass(frozen=True)
class Embed:
    """Turn texts into vectors with the loaded model (the API's /v1/embeddings); Embedded answers.

    `chat_id` is the request's own id: the answer is routed to its client as a chat's events are."""

    chat_id: str
    texts: tuple[str, ...]
    model: str = ""  # as Submit.model


@dataclass(frozen=True)
class Cancel:
    chat_id: str


@dataclass(frozen=True)
class CloseChat:
    """The tab is gone: cancel its turn and forget its cache."""

    chat_id: str


@dataclass(frozen=True)
class Shutdown:
    pass


Command = Union[LoadModel, UnloadModel, EngineOptions, Submit, Embed, Cancel, CloseChat, Shutdown]
