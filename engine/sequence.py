"""One chat turn's state: its tokens, how many are in the KV cache, its text.

A sequence has tokens (prompt + generated) and `computed` (how many of them
the slot's KV cache holds). Prefill and decode are the same thing: feed
tokens[computed:]; sample when that reaches the end.

What the model writes goes through the turn's output parser (engine/parsing): the answer text
then through the stop strings into Token events, the thinking into ReasoningText, the calls into
ToolCallStarted / ToolCallArguments. Stop strings apply to the answer only: a stop string inside
the thinking does not end the turn (the thinking is not what the caller asked to cut).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from enum import Enum

from engine.chat_template import FALLBACK_END_MARKERS
from engine.parsing.call_grammar import MAX_CALLS_PER_TURN, after_open
from engine.parsing.formats import PLAIN
from engine.parsing.harmony import HarmonyParser
from engine.parsing.parts import (
    AnswerText,
    CallArguments,
    CallStarted,
    Part,
    ReasoningPart,
)
from engine.parsing.prompt import TurnSetup, plain_turn
from engine.parsing.stream import OutputParser
from engine.protocol import (
    Constraint,
    Event,
    FinishReason,
    ReasoningText,
    SamplingParams,
    Token,
    ToolCallArguments,
    ToolCallStarted,
    TurnStats,
)
from engine.runners.base import Detokenizer
from engine.speculative import Speculator


class Status(Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass
class Sequence:
    chat_id: str
    prompt: list[int]
    params: SamplingParams
    detokenizer: Detokenizer
    submitted_at: float = field(default_factory=time.perf_counter)
    status: Status = Status.WAITING
    computed: int = 0
    reused: int = 0
    output: list[int] = field(default_factory=list)
    text: str = ""  # emitted so far
    held: str = ""  # decoded but held back: it may be the start of a stop string
    first_token_at: float | None = None
    finished_at: float | None = None
    finish_reason: FinishReason | None = None
    stop_string_seen: bool = False  # the answer reached one of params.stop: it ends here
    stop_string: str = ""  # which one (the first in the text)
    speculator: Speculator | None = None  # drafts for this turn; None: it never drafts
    forced_tokens: int = 0  # tokens its constraint forced, read as drafts (no guess: results._settle_draft)
    # A constraint to install from the next token on (a 1-tuple: (None,) frees the sequence again);
    # the scheduler installs it after the token being taken in (constrain_next)
    pending_constraint: tuple[Constraint | None] | None = None

    def constrain_next(self, constraint: Constraint | None) -> None:
        """Keep the tokens after the one just taken in to `constraint` (None: free again): for a grammar
        that starts when the model opens a tool call. Tokens this step sampled past that one are dropped
        and sampled again under the constraint, so nothing unconstrained slips in."""
        self.pending_constraint = (constraint,)
    setup: TurnSetup = field(default_factory=lambda: plain_turn(PLAIN))
    parser: OutputParser | HarmonyParser = field(init=False)
    reasoning_tokens: int = 0
    reasoning_started_at: float | None = None
    reasoning_ended_at: float | None = None
    _tools_constrained: bool = False  # the call grammar is installed (or was)
    # The answer's grammar where the thinking closes outside the turn's own (engine/parsing/answer_grammar.py):
    # due once the thinking is over, where the prompt opened it or the reasoning budget closed it
    answer_constraint: Constraint | None = None
    answer_due: bool = False

    def __post_init__(self) -> None:
        self.parser = self.setup.parser()

    @property
    def in_reasoning(self) -> bool:
        return self.parser.in_reasoning

    def read(self, piece: str, now: float) -> list[Event]:
        """A generated token's text: its parts as events (the answer after the stop strings).
        The token counts as thinking when the thinking was open before it."""
        if self.parser.in_reasoning:
            self.reasoning_tokens += 1
            self.reasoning_started_at = self.reasoning_started_at or now
        events = self._events(self.parser.feed(piece))
        if self.reasoning_started_at is not None and self.reasoning_ended_at is None and not self.parser.in_reasoning:
            self.reasoning_ended_at = now
        return events

    def _events(self, parts: list[Part]) -> list[Event]:
        events: list[Event] = []
        for part in parts:
            if self.stop_string_seen:
                break  # what came after a stop string is dropped, as if never generated
            if isinstance(part, AnswerText):
                shown = self.take_text(part.text)
                if shown:
                    events.append(Token(self.chat_id, shown))
            elif isinstance(part, ReasoningPart):
                events.append(ReasoningText(self.chat_id, part.text))
            elif isinstance(part, CallStarted):
                events.append(ToolCallStarted(self.chat_id, part.index, part.call_id, part.name))
            elif isinstance(part, CallArguments):
                events.append(ToolCallArguments(self.chat_id, part.index, part.text))
        return events

    def due_constraint(self) -> Constraint | None:
        """The grammar to install from the next token, when one is due: the answer's once the thinking
        closed outside the turn's grammar; for "auto", the rest of a call as soon as the model opened it."""
        if self.answer_due and not self.parser.in_reasoning:
            self.answer_due, self._tools_constrained = False, True
            return self.answer_constraint
        setup = self.setup
        if setup.tools is None or self.params.constraint is not None or self._tools_constrained:
            return None
        if setup.tool_choice == "auto" and self.answer_constraint is None and self.parser.call_just_opened:
            self._tools_constrained = True
            return after_open(setup.tools, setup.tool_specs, setup.tool_choice, setup.parallel_tool_calls,
                              dict(setup.output.special_tokens))
        return None

    def calls_are_done(self) -> bool:
        """The answer has made all the calls it may: one without parallel calls, MAX_CALLS_PER_TURN, the close
        of the wrapper around them, or a call that repeats an earlier one (a small model left free writes the same call until max_tokens).
        The turn ends there with "tool_calls", whether or not a grammar holds it."""
        calls = self.parser.calls
        if self.setup.tools is None or not calls:
            return False
        if self.parser.calls_closed:  # the wrapper around them closed (Gemma 4 waits for <|tool_response>)
            return True
        if not self.setup.parallel_tool_calls or len(calls) >= MAX_CALLS_PER_TURN:
            return True
        last = calls[-1]
        return any(call.name == last.name and _same_json(call.arguments, last.arguments) for call in calls[:-1])

    def finish_parts(self, now: float) -> list[Event]:
        """The turn ends: the parser settles what it held (engine/parsing/stream.py says how)."""
        events = self._events(self.parser.finish())
        if self.reasoning_started_at is not None and self.reasoning_ended_at is None:
            self.reasoning_ended_at = now
        return events

    def tokens_between(self, start: int, end: int) -> list[int]:
        """tokens[start:end] without building the whole list: this runs every step."""
        split = len(self.prompt)
        if start >= split:
            return self.output[start - split : end - split]
        return self.prompt[start:end] + self.output[: max(0, end - split)]

    @property
    def length(self) -> int:
        return len(self.prompt) + len(self.output)

    @property
    def uncomputed(self) -> int:
        return self.length - self.computed

    def look_up_draft(self, room: int) -> None:
        """This step's guessed next tokens, at most `room` of them, into the speculator (engine/speculative.py)."""
        speculator = self.speculator
        if speculator is not None:
            seen = len(speculator.lookup.tokens)
            speculator.look_up(self.tokens_between(seen, self.length), room)

    def take_text(self, piece: str) -> str:
        """Add decoded text; return what may be shown now (stop strings held back)."""
        self.held += piece
        stops = self.params.stop
        if stops:
            hits = [(self.held.find(s), s) for s in stops if s and s in self.held]
            if hits:
                cut, self.stop_string = min(hits, key=lambda hit: hit[0])
                shown, self.held = self.held[:cut], ""
                self.text += shown
                self.stop_string_seen = True
                return shown
        keep = _longest_stop_prefix_suffix(self.held, stops)
        shown = self.held[: len(self.held) - keep]
        self.held = self.held[len(shown) :]
        self.text += shown
        return shown

    def release_held(self, now: float | None = None) -> list[Event]:
        """At the end of a turn that did not stop on a stop string: what the detokenizer, the parser and
        the stop-string check still held back is the answer's, but for the start of a fallback end marker
        (a base model cut off at its token limit mid "<|im_start"), which was never the answer's text."""
        events = self._events(self.parser.feed(self.detokenizer.flush()))
        events += self.finish_parts(now or time.perf_counter())
        markers = tuple(marker for marker in FALLBACK_END_MARKERS if marker in self.params.stop)
        shown = self.held[: len(self.held) - _longest_stop_prefix_suffix(self.held, markers)]
        if shown and not self.stop_string_seen:
            events.append(Token(self.chat_id, shown))
            self.text += shown
        self.held = ""
        return events

    def stats(self) -> TurnStats:
        end = self.finished_at or time.perf_counter()
        first = self.first_token_at
        ttft = (first - self.submitted_at) if first is not None else 0.0
        decode_time = end - first if first is not None else 0.0
        generated = len(self.output)
        decode_rate = (generated - 1) / decode_time if generated > 1 and decode_time > 0 else 0.0
        return TurnStats(
            prompt_tokens=len(self.prompt),
            reused_tokens=self.reused,
            generated_tokens=generated,
            time_to_first_token_s=ttft,
            decode_tokens_per_second=decode_rate,
            total_s=end - self.submitted_at,
            drafted_tokens=self.speculator.drafted if self.speculator else 0,
            accepted_tokens=self.speculator.accepted if self.speculator else 0,
            drafts_by_source=tuple((source, *counts) for source, counts in sorted(self.speculator.by_source.items()))
            if self.speculator else (),
            forced_tokens=self.forced_tokens,
            reasoning_tokens=self.reasoning_tokens,
            reasoning_s=self._reasoning_seconds(end),
        )

    def _reasoning_seconds(self, end: float) -> float:
        started = self.reasoning_started_at
        return 0.0 if started is None else (self.reasoning_ended_at or end) - started


def _same_json(first: str, second: str) -> bool:
    try:
        return bool(json.loads(first) == json.loads(second))
    except ValueError:
        return first.strip() == second.strip()


def _longest_stop_prefix_suffix(text: str, stops: tuple[str, ...]) -> int:
    """Length of the longest end of `text` that could begin a stop string."""
    best = 0
    for stop in stops:
        for size in range(min(len(stop) - 1, len(text)), best, -1):
            if stop.startswith(text[-size:]):
                best = size
                break
    return best


def common_prefix_length(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n
