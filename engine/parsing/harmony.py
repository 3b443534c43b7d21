"""gpt-oss's harmony output: messages on channels instead of inline markers.

After the generation prompt `<|start|>assistant` the model writes messages such as
`<|channel|>analysis<|message|>…<|end|>` (thinking), `<|start|>assistant<|channel|>final<|message|>…`
(the answer) and `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>`
(a tool call; the recipient may also stand before the channel). `<|return|>` and `<|call|>` end the
turn (end-of-generation tokens: the parser may never see them, and `finish()` closes the message).
"""

from __future__ import annotations

import re

from engine.parsing.markers import earliest, partial_tail
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

MESSAGE, END_MARKERS = "<|message|>", ("<|end|>", "<|call|>", "<|return|>")
HEADER_STARTS = ("<|", "to=")  # a header opens with a special token, or the recipient after <|start|>assistant
RECIPIENT = re.compile(r"to=functions\.([^\s<]+)")


class HarmonyParser:
    """Same interface as engine.parsing.stream.OutputParser."""

    def __init__(self, in_reasoning: bool = False) -> None:
        self._pending = ""
        self._parts: list[Part] = []
        self._header: str | None = ""  # the header being read; None while in a message body
        self._kind = "answer"  # what the current body is: "reasoning", "answer", "call"
        self.calls: list[ToolCall] = []
        self._call: tuple[str, str] | None = None  # (id, name) of the call being written
        self._arguments = ""
        self.answer = ""
        self.reasoning_text = ""
        self.reasoning_closed = False
        self._reasoned = False
        self.cut_call = False  # the turn ended inside a call's message (its <|call|> never came)

    # A call's name is read with its header: the lazy call grammar does not apply (the arguments stay free)
    call_just_opened = False
    calls_closed = False  # no wrapper around harmony's calls: <|call|> ends the turn itself

    @property
    def in_reasoning(self) -> bool:
        return self._header is None and self._kind == "reasoning"

    def feed(self, text: str) -> list[Part]:
        self._pending += text
        while self._pending and (self._read_header() if self._header is not None else self._read_body()):
            pass
        return self._take()

    def finish(self) -> list[Part]:
        if self._header is None:
            self.cut_call = self._kind == "call"
            keep = partial_tail(self._pending, END_MARKERS)
            self._emit(self._pending[: len(self._pending) - keep])
            self._end_message()
        elif self._header.strip() and "<|" not in self._header:
            self._emit_answer(self._header)
        self._pending = ""
        return self._take()

    def close_reasoning(self, header_follows: bool = False) -> str:
        """The budget ran out: end the analysis message and open the final one; where `header_follows`
        (a grammar writes the next message's header: a call on the commentary channel, or the final
        answer) only begin the next message."""
        self._end_message()
        self._kind, self._pending = "answer", ""
        if header_follows:
            self._header = ""
            return "<|end|><|start|>assistant"
        self._header = None
        return "<|end|><|start|>assistant<|channel|>final<|message|>"

    def _read_header(self) -> bool:
        assert self._header is not None
        header, self._pending = self._header + self._pending, ""
        at = header.find(MESSAGE)
        if at >= 0:
            self._pending = header[at + len(MESSAGE) :]
            self._open_message(header[:at])
            return True
        head = header.lstrip()
        if not any(head.startswith(start) or start.startswith(head) for start in HEADER_STARTS):
            # The model wrote plain text without a header: it is the answer.
            self._header, self._kind, self._pending = None, "answer", header
            return True
        self._header = header
        return False

    def _open_message(self, header: str) -> None:
        self._header = None
        recipient = RECIPIENT.search(header)
        if recipient:
            self._kind = "call"
            self._call = (new_call_id(), recipient.group(1))
            self._arguments = ""
            self._parts.append(CallStarted(len(self.calls), *self._call))
        elif "<|channel|>analysis" in header:
            self._kind = "reasoning"
            if self._reasoned:
                self._emit("\n")
            self._reasoned = True
        else:
            self._kind = "answer"

    def _read_body(self) -> bool:
        found = earliest(self._pending, END_MARKERS)
        if found is None:
            keep = partial_tail(self._pending, END_MARKERS)
            self._emit(self._pending[: len(self._pending) - keep])
            self._pending = self._pending[len(self._pending) - keep :]
            return False
        at, marker = found
        self._emit(self._pending[:at])
        self._pending = self._pending[at + len(marker) :]
        self._end_message()
        self._header = ""
        return True

    def _end_message(self) -> None:
        if self._kind == "call" and self._call is not None:
            if not self._arguments.strip():
                self._emit("{}")
            self.calls.append(ToolCall(self._call[0], self._call[1], self._arguments))
            self._parts.append(CallDone(len(self.calls) - 1))
            self._call = None
        elif self._kind == "reasoning":
            self.reasoning_closed = True
        self._kind = "answer"

    def _emit(self, text: str) -> None:
        if not text:
            return
        if self._kind == "reasoning":
            self.reasoning_text += text
            self._parts.append(ReasoningPart(text))
        elif self._kind == "call":
            self._arguments += text
            self._parts.append(CallArguments(len(self.calls), text))
        else:
            self._emit_answer(text)

    def _emit_answer(self, text: str) -> None:
        self.answer += text
        self._parts.append(AnswerText(text))

    def _take(self) -> list[Part]:
        parts, self._parts = self._parts, []
        return parts
