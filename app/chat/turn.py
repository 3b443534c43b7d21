"""What one turn of a chat tab sends: the conversation with its system prompt, sampling and Think choice.

The chat's own panel changes go on top of the app's defaults; every tool call the model made gets an
answer (app/chat/stored_tool_calls.py); pictures are left out when the chat's model cannot see them (a model
chosen since they were sent), and the tab says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from app.bridge import ChatMessage, SamplingParams
from app.chat.think_control import ThinkControl
from app.chat.stored_tool_calls import answer_every_call

PICTURES_LEFT_OUT = "The earlier pictures were left out: this model cannot see them."


@dataclass(frozen=True)
class Turn:
    """One turn's request, ready for the bridge (or for the tools to send once their servers are up)."""

    conversation: list[ChatMessage]
    sampling: SamplingParams
    template_options: tuple[tuple[str, str], ...]
    pictures_left_out: bool


def prepare_turn(messages: Sequence[ChatMessage], sampling: SamplingParams, system_prompt: str,
                 think: ThinkControl, model_sees_pictures: bool) -> Turn:
    """The request for the next answer to `messages`; `sampling` and `system_prompt` already the chat's own."""
    conversation = ([ChatMessage("system", system_prompt)] if system_prompt else []) + answer_every_call(messages)
    left_out = not model_sees_pictures and any(message.images for message in conversation)
    if left_out:
        conversation = [replace(message, images=()) for message in conversation]
    budget = think.reasoning_budget()
    if budget is not None:
        sampling = replace(sampling, reasoning_budget=budget)
    return Turn(conversation, sampling, think.template_options(), left_out)
