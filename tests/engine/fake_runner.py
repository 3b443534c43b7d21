"""A scripted runner for scheduler unit tests only (never an end-to-end stand-in).

Tokens are characters (ord). The "model" sees its slot's whole cache: the text
before the first '>' is the prompt, and it answers REPLIES[prompt] one
character per step, then EOS. It checks that the scheduler feeds every slot's
positions contiguously, so a wrong reuse of the cache fails loudly. Drafts are
verified as the real runners do: all of them go into the cache, the answer's
next characters are compared with them in turn, and the scheduler must drop the
rejected tail itself.
"""

from __future__ import annotations

import threading
from typing import Sequence

from engine.detokenizer import ByteDetokenizer
from engine.parsing.formats import OutputFormat
from engine.protocol import ChatMessage, Constraint, ModelInfo, SamplingParams, TokenLogprob, ToolSpec
from engine.runners.base import Drafter, SlotWork

EOS = 0


def encode(text: str) -> list[int]:
    return [ord(c) for c in text]


class FakeRunner:
    def __init__(self, replies: dict[str, str], slots: int = 2, batch_tokens: int = 64, context_length: int = 256,
                 can_remove: bool = True, can_copy: bool = True, end_markers: tuple[str, ...] = (),
                 can_draft: bool = True, splits_uneven_steps: bool = False,
                 output_format: OutputFormat | None = None, drafter: Drafter | None = None,
                 forced_chars: str = "") -> None:
        self.replies = replies
        self.forced_chars = forced_chars  # under a constraint, the reply's next characters among these are forced
        self.drafter = drafter
        self.slots = slots
        self.batch_tokens = batch_tokens
        self.context_length = context_length
        self.can_remove = can_remove
        self.can_copy = can_copy
        self.end_markers = end_markers
        self.can_draft = can_draft
        self.splits_uneven_steps = splits_uneven_steps
        self.output_format = output_format or OutputFormat()
        self.kv: list[list[int]] = [[] for _ in range(slots)]
        self.copies: list[tuple[int, int, int]] = []
        self.steps: list[list[tuple[int, int, bool]]] = []  # per forward: (slot, n tokens, sample)
        self.drafts: list[list[tuple[int, int, int]]] = []  # per forward: (slot, n drafted, n accepted)
        self.params: dict[int, SamplingParams] = {}
        self.constraints: list[tuple[int, Constraint | None]] = []  # set_constraint calls: (slot, constraint)
        self.last_sampled: dict[int, list[int]] = {}
        self.sampled_under: dict[int, list[int]] = {}  # slot -> the tokens it sampled with a constraint set
        self.constraints_gate = threading.Event()  # cleared: constrained decoding is not ready yet
        self.constraints_gate.set()
        self.constraint_waits = 0
        self.constraints_prepared = 0  # prepare_constraints calls: turns that may need a grammar mid-answer
        self.info = ModelInfo("fake", "", "llamacpp", "cpu", "none", "none", context_length, slots, 0, 0, False)

    def render_chat(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = (),
                    options: Sequence[tuple[str, str]] = ()) -> str:
        return "".join(m.content for m in messages) + ">"

    def tokenize(self, text: str) -> list[int]:
        return encode(text)

    def detokenizer(self) -> ByteDetokenizer:
        return ByteDetokenizer(lambda t: chr(t).encode("utf-8"))

    def is_end_of_generation(self, token: int) -> bool:
        return token == EOS

    def begin_turn(self, slot: int, params: SamplingParams) -> None:
        self.params[slot] = params

    def set_constraint(self, slot: int, constraint: Constraint | None) -> None:
        self.constraints.append((slot, constraint))
        if constraint is None:
            self.sampled_under.pop(slot, None)
        else:
            self.sampled_under[slot] = []

    def constraints_ready(self, wait: float = 0.0) -> bool:
        """Always ready unless a test holds it back (`constraints_gate` cleared): then the waits are counted."""
        if self.constraints_gate.is_set():
            return True
        self.constraint_waits += 1
        return False

    def prepare_constraints(self) -> None:
        self.constraints_prepared += 1

    def forced_tokens(self, slot: int, limit: int) -> list[int]:
        """Under a constraint, the reply's next characters while they are among `forced_chars` (the last sampled
        one, not fed yet, counted as fed)."""
        constrained = slot in self.sampled_under or self.params.get(slot, SamplingParams()).constraint is not None
        if not constrained or not self.last_sampled.get(slot):
            return []
        cached = self.kv[slot] + self.last_sampled[slot][-1:]
        forced: list[int] = []
        while len(forced) < limit and (token := self._next(cached + forced)) != EOS and chr(token) in self.forced_chars:
            forced.append(token)
        return forced

    def step_logprobs(self, slot: int) -> list[TokenLogprob]:
        """Token t's log-probability is -t/1000: a scripted value the scheduler's events must carry."""
        if self.params.get(slot, SamplingParams()).logprobs is None:
            return []
        return [TokenLogprob(chr(t), -t / 1000) for t in self.last_sampled.get(slot, [])]

    def remove_from(self, slot: int, position: int) -> bool:
        if not self.can_remove:
            return False
        del self.kv[slot][position:]
        return True

    def clear_slot(self, slot: int) -> None:
        self.kv[slot] = []

    def copy_prefix(self, source: int, target: int, length: int) -> bool:
        if not self.can_copy:
            return False
        self.kv[target] = list(self.kv[source][:length])
        self.copies.append((source, target, length))
        return True

    def forward(self, work: Sequence[SlotWork]) -> dict[int, list[int]]:
        assert sum(len(w.fed) for w in work) <= self.batch_tokens
        assert len({w.slot for w in work}) == len(work), "one entry per slot per step"
        assert all(w.sample or not w.draft for w in work), "drafts only where a token is sampled"
        self.steps.append([(w.slot, len(w.tokens), w.sample) for w in work])
        self.drafts.append([])
        sampled: dict[int, list[int]] = {}
        for item in work:
            assert item.start_pos == len(self.kv[item.slot]), "positions must be contiguous"
            assert item.start_pos + len(item.fed) <= self.context_length, "fed past the context"
            seen = len(self.kv[item.slot]) + len(item.tokens)
            self.kv[item.slot].extend(item.fed)
            if item.sample:
                sampled[item.slot] = self._verify(self.kv[item.slot], seen, item.draft)
                if item.draft:
                    self.drafts[-1].append((item.slot, len(item.draft), len(sampled[item.slot]) - 1))
        self.last_sampled = sampled
        for slot, tokens in sampled.items():
            if slot in self.sampled_under:
                self.sampled_under[slot] += tokens
        return sampled

    def _verify(self, kv: list[int], seen: int, draft: list[int]) -> list[int]:
        new = []
        for offset, guess in enumerate([*draft, None]):
            new.append(self._next(kv[: seen + offset]))
            if new[-1] != guess:
                break
        return new

    def _next(self, cached: list[int]) -> int:
        text = "".join(chr(t) for t in cached)
        # The last turn's prompt ends at the last '>'; earlier turns are history.
        prompt, _, generated = text.rpartition(">")
        reply = self.replies.get(prompt.split("|")[-1], "ok")
        return ord(reply[len(generated)]) if len(generated) < len(reply) else EOS

    def kv_cache_bytes(self) -> int:
        return sum(len(k) for k in self.kv)

    def close(self) -> None:
        pass
