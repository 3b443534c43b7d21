"""The one streaming parser of a turn: decoded text in, parts out (answer, reasoning, tool calls).

Feed it the detokenized pieces as they come; it hands back parts. A marker is never shown as
text: text that could be the start of one is held back until it is known not to be. The end:
`finish()` at the end of the turn.
- A half-open marker left at the end (max_tokens cut it) is dropped.
- Thinking that never closed stays reasoning (the turn ran out while thinking).
- A call whose name was never whole is dropped with its marker; a call that was opened (name
  known, CallStarted sent) but whose arguments never closed stays a call with the arguments it
  got, as OpenAI reports a call cut by the token limit (the turn's reason stays "length").
- The thinking opens only before any answer text: a `<think>` later in an answer is text.
Whitespace right inside the thinking markers and between the thinking, the calls and the answer
is dropped, as the templates write it.
"""

from __future__ import annotations

from engine.parsing.formats import OutputFormat, ToolCallFormat
from engine.parsing.json_call import CallObject, JsonDepth
from engine.parsing.markers import earliest, json_call_start, partial_tail
from engine.parsing.parts import (
    AnswerText,
    CallArguments,
    CallDone,
    CallStarted,
    Part,
    ReasoningPart,
    new_call_id,
)
from engine.protocol import ToolCall

ANSWER, REASONING, CALL, AFTER_CALL, ARRAY, NAME, ARGS = (
    "answer", "reasoning", "call", "after_call", "array", "name", "args")


class OutputParser:
    """Inline markers: <think>…</think>, [THINK]…[/THINK], <tool_call>{…}</tool_call>, [TOOL_CALLS]…, JSON calls."""

    def __init__(self, output: OutputFormat, tools: ToolCallFormat | None = None, in_reasoning: bool = False) -> None:
        self._reasoning = output.reasoning
        self._tools = tools
        self._mode = REASONING if in_reasoning and self._reasoning is not None else ANSWER
        self._pending = ""
        self._parts: list[Part] = []
        self._answer_started = False  # answer text or a call came: thinking can no longer open
        self._trim_answer = False  # drop whitespace before the next answer text
        self._reasoning_ws = ""  # whitespace at the end of the thinking so far, held until more comes
        self._reasoning_started = False
        self._call: CallObject | None = None
        self._call_open = False  # CallStarted was sent for self._call
        self._opened_now = False  # an opening marker was read in the last piece
        self._bare_arguments: JsonDepth | None = None  # style name_args: the arguments object itself
        self._name = ""
        self.calls: list[ToolCall] = []
        self._call_ids: list[str] = []
        self._arguments: list[str] = []
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
        return self._opened_now and fresh and self._mode in (CALL, ARRAY, NAME) and not self._pending.strip()

    def feed(self, text: str) -> list[Part]:
        self._opened_now = False
        self._pending += text
        while self._pending and self._advance():
            pass
        return self._take()

    def finish(self) -> list[Part]:
        """The turn ended: settle what is held (the module docstring says how)."""
        if self._mode in (CALL, ARGS, NAME) and self._call_open:
            self._end_call()
        elif self._mode == REASONING and self._pending:
            self._emit_reasoning(self._pending[: len(self._pending) - partial_tail(self._pending, [self._reasoning_close])])
        elif self._mode == ANSWER and self._pending:
            self._emit_answer(self._pending[: len(self._pending) - partial_tail(self._pending, self._answer_markers())])
        self._pending = ""
        return self._take()

    def close_reasoning(self) -> str:
        """The engine closes the thinking itself (the budget ran out): the marker text it writes."""
        self._mode, self._pending = ANSWER, ""
        self._end_reasoning()
        if self._reasoning is not None and self._reasoning.family == "think":
            return f"\n{self._reasoning.close}\n\n"  # as the templates write a closed thought
        return self._reasoning_close

    # ------------------------------------------------------------ modes

    def _advance(self) -> bool:
        """Consume what the current mode can; False when it must wait for more text."""
        handler = {ANSWER: self._in_answer, REASONING: self._in_reasoning, CALL: self._in_call,
                   AFTER_CALL: self._after_call, ARRAY: self._in_array, NAME: self._in_name, ARGS: self._in_arguments}
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

    def _open_call(self) -> None:
        assert self._tools is not None
        self._answer_started = self._opened_now = True
        style = self._tools.style
        if style == "json_array":
            self._mode = ARRAY
        elif style == "name_args":
            self._mode, self._name = NAME, ""
        else:
            self._start_object()

    def _start_object(self) -> None:
        assert self._tools is not None
        self._answer_started = True
        self._call = CallObject(self._tools.name_key, self._tools.arguments_key)
        self._call_open, self._mode = False, CALL

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

    def _in_call(self) -> bool:
        call = self._call
        assert call is not None
        if not call.raw and not self._pending.lstrip():
            return False
        if not call.raw:
            self._pending = self._pending.lstrip()
            if not self._pending.startswith("{"):  # not a call object after all: the marker and text are answer
                self._mode = ANSWER
                return True
        taken = call.feed(self._pending)
        self._pending = self._pending[taken:]
        self._stream_call()
        if call.done:
            self._end_call()
            self._mode = self._after_object_mode()
            return True
        return False

    def _after_object_mode(self) -> str:
        assert self._tools is not None
        if self._tools.style == "json_array":
            return ARRAY
        return AFTER_CALL if self._tools.close or not self._tools.open else ANSWER

    def _stream_call(self) -> None:
        call = self._call
        if call is None or call.name is None:
            return
        if not self._call_open:
            self._begin_call(call.name)
        fragment = call.take_arguments()
        if fragment:
            self._add_arguments(fragment)

    def _begin_call(self, name: str) -> None:
        assert self._tools is not None
        index = len(self._call_ids)
        call_id = new_call_id(short="id" in self._tools.extra_keys)
        self._call_ids.append(call_id)
        self._arguments.append("")
        self._call_open = True
        self._parts.append(CallStarted(index, call_id, name))
        self._name = name

    def _add_arguments(self, fragment: str) -> None:
        self._arguments[-1] += fragment
        self._parts.append(CallArguments(len(self._call_ids) - 1, fragment))

    def _end_call(self) -> None:
        """The call is whole (or the turn ended inside it): record it."""
        call = self._call
        if call is not None and call.name is not None:
            self._stream_call()
        if self._call_open:
            index = len(self._call_ids) - 1
            self.calls.append(ToolCall(self._call_ids[index], self._name, self._arguments[index]))
            self._parts.append(CallDone(index))
        self._call, self._call_open, self._bare_arguments = None, False, None
        self._trim_answer = True

    def _after_call(self) -> bool:
        """After a call object: its close marker, the separator, or the next call (Llama's `;`)."""
        assert self._tools is not None
        stripped = self._pending.lstrip()
        close = self._tools.close
        if close and stripped.startswith(close):
            self._pending, self._mode = stripped[len(close) :], ANSWER
            return True
        if close and close.startswith(stripped):
            return False
        if not close and stripped.startswith(";"):
            self._pending = stripped[1:]
            return True
        if not close and stripped.startswith("{"):
            self._pending = stripped
            self._start_object()
            return True
        if not stripped:
            return False
        self._pending, self._mode = stripped, ANSWER
        return True

    def _in_array(self) -> bool:
        """Mistral's [TOOL_CALLS][{…}, {…}]: brackets and commas between the objects."""
        stripped = self._pending.lstrip(" \t\r\n,[")
        if not stripped:
            self._pending = ""
            return False
        if stripped.startswith("{"):
            self._pending = stripped
            self._start_object()
            return True
        self._pending, self._mode = stripped.removeprefix("]"), ANSWER
        return True

    def _in_name(self) -> bool:
        """name_args: the name up to the arguments marker ([TOOL_CALLS]name[ARGS]{…})."""
        assert self._tools is not None
        marker = self._tools.args_marker
        at = self._pending.find(marker)
        if at < 0:
            return False
        name = self._pending[:at].strip()
        self._pending = self._pending[at + len(marker) :].lstrip()
        self._begin_call(name)
        self._bare_arguments, self._mode = JsonDepth(), ARGS
        return True

    def _in_arguments(self) -> bool:
        depth = self._bare_arguments
        assert depth is not None
        for count, char in enumerate(self._pending, 1):
            depth.step(char)
            if depth.depth == 0 and not depth.in_string:
                self._add_arguments(self._pending[:count])
                self._pending = self._pending[count:]
                self._end_call()
                self._mode = AFTER_CALL if self._tools is not None and self._tools.close else ANSWER
                return True
        self._add_arguments(self._pending)
        self._pending = ""
        return False

    # ------------------------------------------------------------ output

    def _emit_answer(self, text: str) -> None:
        if self._trim_answer:
            text = text.lstrip()
            self._trim_answer = not text
        if not text:
            return
        if text.strip():
            self._answer_started = True
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
