"""The one streaming parser of a turn: decoded text in, parts out (answer, reasoning, tool calls).

Feed it the detokenized pieces as they come; it hands back parts. A marker is never shown as
text: text that could be the start of one is held back until it is known not to be. The end:
`finish()` at the end of the turn.
- A half-open marker left at the end (max_tokens cut it) is dropped.
- Thinking that never closed stays reasoning (the turn ran out while thinking).
- A call whose name was never whole is dropped with its marker; a call that was opened (name
  known, CallStarted sent) but never closed is recorded with the arguments it got and `cut_call`
  is set: where the turn ended at its token limit the scheduler leaves that call out of the
  finished answer (finish reason "length"), so a call with broken arguments is never returned.
- The thinking opens only before any answer text: a `<think>` later in an answer is text.
Whitespace right inside the thinking markers and between the thinking, the calls and the answer
is dropped, as the templates write it; whitespace before the answer's first text waits for that text
and goes with it, or is dropped when a call comes first (a call's answer has no text).
"""

from __future__ import annotations

from engine.parsing.call_modes import (
    AFTER_CALL,
    ANSWER,
    ARGS,
    ARRAY,
    CALL,
    NAME,
    BETWEEN,
    REASONING,
    XML,
    CallModes,
)
from engine.parsing.formats import OutputFormat, ToolCallFormat
from engine.parsing.markers import earliest, json_call_start, partial_tail
from engine.parsing.parts import AnswerText, Part, ReasoningPart
from engine.parsing.xml_call import properties_by_tool
from engine.protocol import ToolSpec


class OutputParser(CallModes):
    """Inline markers: <think>…</think>, [THINK]…[/THINK], <tool_call>{…}</tool_call>, [TOOL_CALLS]…, JSON calls."""

    def __init__(self, output: OutputFormat, tools: ToolCallFormat | None = None, in_reasoning: bool = False,
                 tool_specs: tuple[ToolSpec, ...] = ()) -> None:
        self._reasoning = output.reasoning
        self._tools = tools
        self._properties = properties_by_tool(tool_specs)
        self._mode = REASONING if in_reasoning and self._reasoning is not None else ANSWER
        self._pending = ""
        self._parts: list[Part] = []
        self._answer_started = False  # answer text or a call came: thinking can no longer open
        self._trim_answer = False  # drop whitespace before the next answer text
        self._leading_ws = ""  # whitespace before any answer text: it goes out with the first text
        self._reasoning_ws = ""  # whitespace at the end of the thinking so far, held until more comes
        self._reasoning_started = False
        self._opened_now = False  # an opening marker was read in the last piece
        self._init_calls()
        self.answer = ""
        self.reasoning_text = ""
        self.reasoning_closed = False

    @property
    def in_reasoning(self) -> bool:
        return self._mode == REASONING

    # ------------------------------------------------------------ input

    @property
    def call_just_opened(self) -> bool:
        """The last piece ended right after a call's opening marker (whitespace at most after it): the
        rest of the call can be constrained from the next token on (engine/parsing/call_grammar.py)."""
        fresh = self._call is None or not self._call.raw
        return self._opened_now and fresh and self._mode in (CALL, ARRAY, NAME, XML) and not self._pending.strip()

    def feed(self, text: str) -> list[Part]:
        self._opened_now = False
        self._pending += text
        while self._pending and self._advance():
            pass
        return self._take()

    def finish(self) -> list[Part]:
        """The turn ended: settle what is held (the module docstring says how)."""
        if self._mode in (CALL, ARGS, NAME, XML) and self._call_open:
            self.cut_call = True
            self._end_call()
        elif self._mode == REASONING and self._pending:
            self._emit_reasoning(self._pending[: len(self._pending) - partial_tail(self._pending, [self._reasoning_close])])
        elif self._mode == ANSWER and self._pending:
            self._emit_answer(self._pending[: len(self._pending) - partial_tail(self._pending, self._answer_markers())])
        if self._leading_ws and not self._answer_started:  # an answer of whitespace only
            self._answer_started, text, self._leading_ws = True, self._leading_ws, ""
            self._emit_answer(text)
        self._pending = ""
        return self._take()

    def close_reasoning(self, header_follows: bool = False) -> str:
        """The engine closes the thinking itself (the budget ran out): the marker text it writes.
        (`header_follows` is harmony's: inline thinking has no headers.)"""
        self._mode, self._pending = ANSWER, ""
        self._end_reasoning()
        if self._reasoning is not None and self._reasoning.family == "think":
            return f"\n{self._reasoning.close}\n\n"  # as the templates write a closed thought
        return self._reasoning_close

    # ------------------------------------------------------------ modes

    def _advance(self) -> bool:
        """Consume what the current mode can; False when it must wait for more text."""
        handler = {ANSWER: self._in_answer, REASONING: self._in_reasoning, CALL: self._in_call,
                   AFTER_CALL: self._after_call, ARRAY: self._in_array, NAME: self._in_name, ARGS: self._in_arguments,
                   XML: self._in_xml, BETWEEN: self._between_calls}
        return handler[self._mode]()

    @property
    def _reasoning_close(self) -> str:
        return self._reasoning.close if self._reasoning is not None else ""

    def _answer_markers(self) -> list[str]:
        markers = list(self._tools.opens) if self._tools is not None else []
        if self._reasoning is not None and not self._answer_started:
            markers.append(self._reasoning.open)
        return markers

    def _in_answer(self) -> bool:
        begins = self._json_call_begins()
        if begins is not False:
            return begins is True
        markers = self._answer_markers()
        found = earliest(self._pending, markers)
        if found is None:
            keep = partial_tail(self._pending, markers)
            self._emit_answer(self._pending[: len(self._pending) - keep])
            self._pending = self._pending[len(self._pending) - keep :]
            return False
        at, marker = found
        thinking = self._reasoning is not None and marker == self._reasoning.open
        if thinking and self._pending[:at].strip():
            at, marker, thinking = at + len(marker), "", False  # after answer text <think> is text
        self._emit_answer(self._pending[:at])
        self._pending = self._pending[at + len(marker) :]
        if not marker:
            return True
        if thinking:
            self._mode, self._reasoning_started = REASONING, False
        else:
            self._leading_ws = ""  # whitespace before a call is not the answer's
            self._open_call()
        return True

    def _json_call_begins(self) -> bool | None:
        """Formats without an opening marker (Llama 3.x JSON): a call is the answer's first object.

        True: a call began; None: not known yet (wait for more text); False: it is not one."""
        tools = self._tools
        if tools is None or tools.open or tools.style != "json" or self._answer_started:
            return False
        stripped = self._pending.lstrip()
        if not stripped:
            return None
        starts = json_call_start(stripped, tools.name_key)
        if starts:
            self._pending = stripped
            self._start_object()
        return starts

    def _in_reasoning(self) -> bool:
        close = self._reasoning_close
        at = self._pending.find(close)
        if at < 0:
            keep = partial_tail(self._pending, [close])
            self._emit_reasoning(self._pending[: len(self._pending) - keep])
            self._pending = self._pending[len(self._pending) - keep :]
            return False
        self._emit_reasoning(self._pending[:at])
        self._pending = self._pending[at + len(close) :]
        self._mode = ANSWER
        self._end_reasoning()
        return True

    def _end_reasoning(self) -> None:
        self._reasoning_ws, self.reasoning_closed, self._trim_answer = "", True, True

    # ------------------------------------------------------------ output

    def _emit_answer(self, text: str) -> None:
        if self._trim_answer:
            text = text.lstrip()
            self._trim_answer = not text
        if not text:
            return
        if not self._answer_started:
            if not text.strip():
                self._leading_ws += text
                return
            text, self._leading_ws, self._answer_started = self._leading_ws + text, "", True
        self.answer += text
        self._parts.append(AnswerText(text))

    def _emit_reasoning(self, text: str) -> None:
        if not self._reasoning_started:
            text = text.lstrip()
            self._reasoning_started = bool(text)
        body = text.rstrip()
        tail = text[len(body) :]
        if body:
            shown, self._reasoning_ws = self._reasoning_ws + body, ""
            self.reasoning_text += shown
            self._parts.append(ReasoningPart(shown))
        self._reasoning_ws += tail

    def _take(self) -> list[Part]:
        parts, self._parts = self._parts, []
        return parts
