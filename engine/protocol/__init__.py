"""Messages that cross the engine thread boundary: frozen dataclasses only.

Commands go in through `EngineLoop.send`; events come out through the one
callable the loop was given. Never mutate a message after sending it. One module
for each reason they change: a turn's messages, the model, the commands, the events;
every name is importable from `engine.protocol` itself.
"""

from __future__ import annotations

from engine.protocol.commands import (
    Cancel,
    CloseChat,
    Command,
    Embed,
    EngineOptions,
    LoadModel,
    Shutdown,
    Submit,
    UnloadModel,
)
from engine.protocol.events import (
    ChatError,
    Embedded,
    EngineError,
    EngineStats,
    Event,
    FinishReason,
    Logprobs,
    ModelLoaded,
    ModelLoadFailed,
    ModelLoading,
    ModelStats,
    ModelUnloaded,
    ReasoningText,
    Token,
    TokenLogprob,
    ToolCallArguments,
    ToolCallStarted,
    TurnFinished,
    TurnQueued,
    TurnStarted,
    TurnStats,
)
from engine.protocol.messages import (
    IMAGE_TYPES,
    ChatMessage,
    Constraint,
    ConstraintKind,
    Dictation,
    ImagePart,
    Role,
    SamplingParams,
    Speculative,
    ToolCall,
    ToolSpec,
)
from engine.protocol.model import (
    Backend,
    ModelConfig,
    ModelInfo,
)

__all__ = [
    "IMAGE_TYPES",
    "Backend",
    "Cancel",
    "ChatError",
    "ChatMessage",
    "CloseChat",
    "Command",
    "Constraint",
    "ConstraintKind",
    "Dictation",
    "Embed",
    "Embedded",
    "EngineError",
    "EngineOptions",
    "EngineStats",
    "Event",
    "FinishReason",
    "ImagePart",
    "LoadModel",
    "Logprobs",
    "ModelConfig",
    "ModelInfo",
    "ModelLoadFailed",
    "ModelLoaded",
    "ModelLoading",
    "ModelStats",
    "ModelUnloaded",
    "ReasoningText",
    "Role",
    "SamplingParams",
    "Shutdown",
    "Speculative",
    "Submit",
    "Token",
    "TokenLogprob",
    "ToolCall",
    "ToolCallArguments",
    "ToolCallStarted",
    "ToolSpec",
    "TurnFinished",
    "TurnQueued",
    "TurnStarted",
    "TurnStats",
    "UnloadModel",
]
