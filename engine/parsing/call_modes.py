"""The tool-call modes of the output parser (engine/parsing/stream.py): reading calls in each style.

Apart from the parser so that each stays readable: the parser finds where a call opens, these read
it (a JSON object, a Mistral array of them, or a name then its arguments object) and hand on its
name and its arguments' fragments as they come.
"""

from __future__ import annotations

from engine.parsing.formats import ToolCallFormat
from engine.parsing.gemma_call import GemmaCall
from engine.parsing.json_call import CallObject, JsonDepth
from engine.parsing.parts import CallArguments, CallDone, CallStarted, Part, new_call_id
from engine.parsing.xml_call import XmlCall
from engine.protocol import ToolCall

ANSWER, REASONING, CALL, AFTER_CALL, ARRAY, NAME, ARGS, XML, BETWEEN, GEMMA = (
    "answer", "reasoning", "call", "after_call", "array", "name", "args", "xml", "between", "gemma")


class CallModes:
    """The state of the calls of one turn; OutputParser reads its text and switches between modes."""

    _tools: ToolCallFormat | None
    _mode: str
    _pending: str
    _parts: list[Part]
    _answer_started: bool
    _opened_now: bool
    _trim_answer: bool
    _properties: dict[str, dict]  # each tool's parameter schemas (XML values are typed by them)

    def _init_calls(self) -> None:
        self._call: CallObject | None = None
        self._xml: XmlCall | GemmaCall | None = None
        self._call_open = False  # CallStarted was sent for self._call
        self._bare_arguments: JsonDepth | None = None  # style name_args: the arguments object itself
        self._name = ""
        self.calls: list[ToolCall] = []
        self.calls_closed = False  # the wrapper around the calls closed: the answer has made its calls
        self.cut_call = False  # the turn ended inside the last call (finish() recorded it as it was)
        self._call_ids: list[str] = []
        self._arguments: list[str] = []

    def _open_call(self) -> None:
        assert self._tools is not None
        self._answer_started = self._opened_now = True
        style = self._tools.style
        if style == "json_array":
            self._mode = ARRAY
        elif style == "name_args":
            self._mode, self._name = NAME, ""
        elif style == "xml":
            self._mode, self._xml = XML, XmlCall(self._properties)
        elif style == "gemma":
            self._mode, self._xml = XML, GemmaCall()
        else:
            self._start_object()

    def _start_object(self) -> None:
        assert self._tools is not None
        self._answer_started = True
        self._call = CallObject(self._tools.name_key, self._tools.arguments_key)
        self._call_open, self._mode = False, CALL

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
        self._call, self._call_open, self._bare_arguments, self._xml = None, False, None, None
        self._trim_answer = True

    def _after_call(self) -> bool:
        """After a call object: its close marker, the separator, or the next call (Llama's `;`)."""
        assert self._tools is not None
        stripped = self._pending.lstrip()
        close = self._tools.close
        if close and stripped.startswith(close):
            self._pending = stripped[len(close) :]
            self._mode = BETWEEN if self._tools.calls_close else ANSWER
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

    def _in_xml(self) -> bool:
        """A call body read by its own reader: Qwen3-Coder's <function=NAME><parameter=KEY>…</parameter></function>
        (xml_call.py), Gemma 4's NAME{key:value} (gemma_call.py)."""
        call = self._xml
        assert call is not None
        call.feed(self._pending)
        self._pending = ""
        if call.name is not None and not self._call_open:
            self._begin_call(call.name)
        fragment = call.take_arguments()
        if fragment:
            self._add_arguments(fragment)
        if not call.done:
            return False
        self._pending = call.leftover
        self._end_call()
        self._mode = AFTER_CALL
        return True

    def _between_calls(self) -> bool:
        """Inside a wrapper of calls (DeepSeek's): the next call's own open, or the wrapper's close."""
        assert self._tools is not None
        stripped = self._pending.lstrip()
        own_open, wrapper_close = self._tools.open, self._tools.calls_close
        if stripped.startswith(wrapper_close):
            self._pending, self._mode = stripped[len(wrapper_close) :], ANSWER
            self.calls_closed = True
            return True
        if stripped.startswith(own_open):
            self._pending = stripped[len(own_open) :]
            self._open_call()
            return True
        if not stripped or wrapper_close.startswith(stripped) or own_open.startswith(stripped):
            return False
        self._pending, self._mode = stripped, ANSWER
        return True
