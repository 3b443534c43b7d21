"""OpenAI's response objects, from the engine's TurnFinished: completions, stream chunks, usage.

The engine's finish reasons become OpenAI's: stop and length as they are; a
full context is `length` with a note; a turn cancelled for the server's own
reasons (shutting down, the model changed in the window) is `stop` with a note.
A note rides in the choice as the extra field `note`; OpenAI's clients keep
fields they do not know.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.protocol import TurnFinished

Kind = Literal["chat", "completion"]


@dataclass
class Reply:
    """One request's answer as the client sees it; `id` and `created` stay the same over a stream."""

    kind: Kind
    model: str
    id: str = ""
    created: int = field(default_factory=lambda: int(time.time()))

    def __post_init__(self) -> None:
        if not self.id:
            self.id = ("chatcmpl-" if self.kind == "chat" else "cmpl-") + uuid.uuid4().hex

    @property
    def object(self) -> str:
        return "chat.completion" if self.kind == "chat" else "text_completion"

    def _envelope(self, object_name: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": self.id, "object": object_name, "created": self.created, "model": self.model,
                "system_fingerprint": None, "choices": choices}

    # ------------------------------------------------------------ whole answers

    def complete(self, finished: TurnFinished) -> dict[str, Any]:
        reason, note = finish_reason(finished)
        choice: dict[str, Any] = {"index": 0, "finish_reason": reason, "logprobs": None}
        if self.kind == "chat":
            choice["message"] = {"role": "assistant", "content": finished.text, "refusal": None}
        else:
            choice["text"] = finished.text
        if note:
            choice["note"] = note
        return {**self._envelope(self.object, [choice]), "usage": usage(finished)}

    # ------------------------------------------------------------ streams

    def _chunk(self, text: str | None, reason: str | None = None, note: str = "",
               role: bool = False) -> dict[str, Any]:
        choice: dict[str, Any] = {"index": 0, "finish_reason": reason, "logprobs": None}
        if self.kind == "chat":
            delta: dict[str, Any] = {"role": "assistant"} if role else {}
            if text is not None:
                delta["content"] = text
            choice["delta"] = delta
            object_name = "chat.completion.chunk"
        else:
            choice["text"] = text or ""
            object_name = "text_completion"
        if note:
            choice["note"] = note
        return self._envelope(object_name, [choice])

    def first_chunk(self) -> dict[str, Any]:
        return self._chunk("", role=True)

    def text_chunk(self, text: str) -> dict[str, Any]:
        return self._chunk(text)

    def last_chunk(self, finished: TurnFinished) -> dict[str, Any]:
        reason, note = finish_reason(finished)
        return self._chunk(None if self.kind == "chat" else "", reason, note)

    def usage_chunk(self, finished: TurnFinished) -> dict[str, Any]:
        object_name = "chat.completion.chunk" if self.kind == "chat" else "text_completion"
        return {**self._envelope(object_name, []), "usage": usage(finished)}


def finish_reason(finished: TurnFinished) -> tuple[str, str]:
    """OpenAI's finish reason and, where the engine's own says more, a note for a person."""
    if finished.reason in ("stop", "length"):
        return finished.reason, ""
    if finished.reason == "context_full":
        return "length", finished.message or "The context is full: the answer was cut here."
    return "stop", finished.message or "The answer was stopped before its end."


def usage(finished: TurnFinished) -> dict[str, Any]:
    stats = finished.stats
    return {"prompt_tokens": stats.prompt_tokens, "completion_tokens": stats.generated_tokens,
            "total_tokens": stats.prompt_tokens + stats.generated_tokens,
            "prompt_tokens_details": {"cached_tokens": stats.reused_tokens}}


def model_list(model_id: str | None, created: int) -> dict[str, Any]:
    """The id only: where the model lies on this computer is not the clients' business."""
    models = [] if model_id is None else [{"id": model_id, "object": "model", "created": created,
                                           "owned_by": "hearth"}]
    return {"object": "list", "data": models}
