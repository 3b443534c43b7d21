"""Reading one tool call's JSON as it streams: its name as soon as it is whole, its arguments in fragments.

A call object is {"name": "...", "arguments": {...}} (the keys come from the ToolCallFormat); the
arguments object is passed on as the model writes it, fragment by fragment, so the fragments join
to its JSON text. Keys in any order: arguments written before the name wait for it. Arguments
written as a JSON string (some models quote them) are unquoted once whole.
"""

from __future__ import annotations

import json


class JsonDepth:
    """Where a stream of JSON text stands: nesting depth and whether inside a string."""

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self._escaped = False

    def step(self, char: str) -> None:
        if self.in_string:
            if self._escaped:
                self._escaped = False
            elif char == "\\":
                self._escaped = True
            elif char == '"':
                self.in_string = False
        elif char == '"':
            self.in_string = True
        elif char in "{[":
            self.depth += 1
        elif char in "}]":
            self.depth -= 1


class CallObject:
    """One call object, fed character by character until its closing brace."""

    def __init__(self, name_key: str, arguments_key: str) -> None:
        self._keys = (name_key, arguments_key)
        self._json = JsonDepth()
        self.raw = ""
        self.name: str | None = None
        self._key: str | None = None  # the depth-1 key whose value is being read
        self._pending_key: str | None = None  # a depth-1 key read, its colon not yet
        self._expect_key = False
        self._string_start: int | None = None  # a depth-1 string being read
        self._arguments_start: int | None = None
        self._arguments_end: int | None = None
        self._quoted_arguments: str | None = None
        self._streamed = 0  # characters of the arguments already handed on
        self.done = False

    def feed(self, text: str) -> int:
        """Take characters up to the object's end; return how many were taken."""
        for count, char in enumerate(text, 1):
            self._step(char)
            if self.done:
                return count
        return len(text)

    def _step(self, char: str) -> None:
        state, position = self._json, len(self.raw)
        was_string, depth = state.in_string, state.depth
        self.raw += char
        state.step(char)
        if depth != 1 or (was_string and state.in_string):
            if depth == 0 and char == "{":
                self._expect_key = True
            elif state.depth == 1 and char in "}]" and not was_string and self._arguments_start is not None:
                self._arguments_end = self._arguments_end or position + 1
            return
        if not was_string and state.in_string:
            self._string_start = position
        elif was_string and self._string_start is not None:  # a depth-1 string just ended
            self._on_string(json.loads(self.raw[self._string_start :]))
        elif char in "{[" and self._key == self._keys[1] and self._arguments_start is None:
            self._arguments_start = position
        elif char == ":":
            self._key, self._expect_key = self._pending_key, False
        elif char == ",":
            self._key, self._expect_key = None, True
        elif char == "}":
            self.done = True

    def _on_string(self, value: str) -> None:
        self._string_start = None
        if self._expect_key:
            self._pending_key = value
        elif self._key == self._keys[0]:
            self.name = value
        elif self._key == self._keys[1]:
            self._quoted_arguments = value

    def take_arguments(self) -> str:
        """The arguments' characters not yet handed on (all of them once the object is done)."""
        if self._quoted_arguments is not None:
            if not self.done:
                return ""
            text, self._quoted_arguments = self._quoted_arguments, None
            self._streamed = len(text)
            return text
        if self._arguments_start is None:
            if self.done and self._streamed == 0:
                self._streamed = 2
                return "{}"
            return ""
        end = self._arguments_end if self._arguments_end is not None else len(self.raw)
        start = self._arguments_start + self._streamed
        self._streamed = end - self._arguments_start
        return self.raw[start:end]
