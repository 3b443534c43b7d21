"""The engine loop's inbox without a model: what it refuses, and what it does with nothing loaded."""

from __future__ import annotations

import pytest

from engine.protocol import Cancel, ChatError, ChatMessage, CloseChat, Embed, Embedded, EngineError, Submit, TurnFinished
from tests.engine.engine_harness import EngineHarness


def test_send_refuses_what_is_not_a_command_on_the_callers_thread() -> None:
    harness = EngineHarness()
    try:
        with pytest.raises(TypeError, match=r"takes a command \(LoadModel, UnloadModel, EngineOptions, Submit, Embed, Cancel, CloseChat, Shutdown\)"):
            harness.loop.send("cancel chat 1")  # type: ignore[arg-type]
        assert harness.loop.running and harness.events == []
    finally:
        harness.close()


def test_a_command_slipped_past_send_stops_the_engine_with_an_error_event() -> None:
    harness = EngineHarness()
    try:
        harness.loop._inbox.put("cancel chat 1")  # type: ignore[arg-type]
        error = harness.wait_for(lambda e: isinstance(e, EngineError), timeout=10)
        assert isinstance(error, EngineError) and "cannot apply 'cancel chat 1'" in error.message
    finally:
        harness.close()


def test_embeddings_without_a_model_are_refused_in_words() -> None:
    harness = EngineHarness()
    try:
        harness.loop.send(Embed("e", ("Hello",)))
        answer = harness.wait_for(lambda e: isinstance(e, Embedded), timeout=10)
        assert isinstance(answer, Embedded) and answer.vectors == () and "No model is loaded" in answer.message
    finally:
        harness.close()


def test_cancel_and_close_without_a_model_end_nothing_and_a_turn_is_refused_in_words() -> None:
    harness = EngineHarness()
    try:
        harness.loop.send(Cancel("a"))
        harness.loop.send(CloseChat("a"))
        harness.loop.send(Submit("a", (ChatMessage("user", "Hello"),)))
        finished = harness.finished("a", timeout=10)
        assert finished.reason == "error" and "No model is loaded" in finished.message
        kinds = [type(event) for _, event in harness.events]
        assert kinds == [ChatError, TurnFinished]  # nothing for the Cancel and the CloseChat
    finally:
        harness.close()
