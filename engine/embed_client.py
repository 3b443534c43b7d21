"""Vectors from a model the engine has loaded, for a caller on another thread (the window's document worker).

One Embed command as its own short-lived client of the host, answered between two steps, as
/v1/embeddings is; the caller waits for the Embedded answer.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence

import numpy as np

from engine.clients import EngineHost
from engine.protocol import Embed, Embedded, Event

ENGINE_TIMEOUT_S = 300.0  # a big batch of chunks between chat steps


class EngineEmbedder:
    """Texts to vectors with a model the engine has loaded; callable from any thread but the engine's."""

    def __init__(self, host: EngineHost, model_path: str, timeout_s: float = ENGINE_TIMEOUT_S) -> None:
        self.host, self.model_path, self.timeout_s = host, model_path, timeout_s

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        answered = threading.Event()
        answers: list[Embedded] = []

        def on_event(event: Event) -> None:
            if isinstance(event, Embedded):
                answers.append(event)
                answered.set()

        client = self.host.attach(f"documents-{uuid.uuid4().hex[:8]}", on_event, one_turn_chats=True)
        try:
            client.send(Embed(f"documents-{uuid.uuid4().hex}", tuple(texts), model=self.model_path))
            if not answered.wait(self.timeout_s):
                raise RuntimeError(f"the model made no vectors in {self.timeout_s:.0f} s")
        finally:
            client.detach()
        if answers[0].message:
            raise RuntimeError(answers[0].message)
        return np.array(answers[0].vectors, dtype=np.float32)
