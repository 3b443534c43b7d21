"""llguidance's view of a model's vocabulary, built once on a worker thread of its own.

It takes about a second on llama.cpp (0.7 s for Llama 3's 128k tokens, 0.9 s for Qwen's 152k, 1.4 s for
gpt-oss's 201k on the 2-core VMs; 13 s for 128k before the runners read each token's bytes themselves),
so the engine keeps stepping the other chats while a constrained one waits: the scheduler holds that chat back until `ready()` says so. The
grammars compiled against it are kept too: a chat's next turn reuses its schema's.
"""

from __future__ import annotations

import threading
from typing import Callable

from llguidance import LLMatcher, LLTokenizer

from engine.constraints.grammar import ConstraintError
from engine.protocol import Constraint

COMPILED_KEPT = 32  # compiled grammars kept per vocabulary


class VocabularyBuild:
    def __init__(self, make: Callable[[], LLTokenizer]) -> None:
        self._make = make
        self._tokenizer: LLTokenizer | None = None
        self._error: ConstraintError | None = None
        self._thread: threading.Thread | None = None
        self._compiled: dict[Constraint, LLMatcher] = {}

    def ready(self, wait: float = 0.0) -> bool:
        """True when it is built; the first call starts building it on a worker thread. `wait`: seconds
        to wait for it. A build that failed counts as ready: get() then raises its ConstraintError."""
        if self._tokenizer is not None or self._error is not None:
            return True
        if self._thread is None:
            self._thread = threading.Thread(target=self._build, name="constraint-tokenizer", daemon=True)
            self._thread.start()
        if wait > 0:
            self._thread.join(wait)
        return self._tokenizer is not None or self._error is not None

    @property
    def started(self) -> bool:
        """Whether its build has begun (or ended): ready() was asked, or get()."""
        return self._thread is not None or self._tokenizer is not None or self._error is not None

    def join(self) -> None:
        """Wait for a build under way to end: it reads the model's vocabulary, which closing the model frees."""
        if self._thread is not None:
            self._thread.join()

    def get(self) -> LLTokenizer:
        if self._tokenizer is None and self._error is None:
            if self._thread is None:
                self._build()  # nobody asked ready() first: build it here
            else:
                self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._tokenizer is not None
        return self._tokenizer

    def _build(self) -> None:
        try:
            self._tokenizer = self._make()
        except (ValueError, TypeError, RuntimeError) as error:  # llguidance.hf: "Only fast tokenizers ..."
            self._error = ConstraintError(f"Constrained decoding cannot read this model's vocabulary: {error}")

    def compile(self, constraint: Constraint, grammar: str) -> LLMatcher:
        """A matcher of `grammar` (`constraint`'s) at its start, to deep_copy; ConstraintError where llguidance
        refuses it."""
        compiled = self._compiled.get(constraint)
        if compiled is None:
            matcher = LLMatcher(self.get(), grammar, log_level=0)
            if matcher.is_error():
                raise ConstraintError(f"The constraint cannot be used with this model: {matcher.get_error()}")
            if len(self._compiled) >= COMPILED_KEPT:
                del self._compiled[next(iter(self._compiled))]
            compiled = self._compiled[constraint] = matcher
        return compiled
