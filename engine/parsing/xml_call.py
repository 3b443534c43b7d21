"""Reading one XML-style tool call as it streams (Qwen3-Coder's): the name, then each parameter as JSON.

A call is `<function=NAME>` then `<parameter=KEY>\\nVALUE\\n</parameter>` for each argument, then
`</function>` (inside the format's `<tool_call>…</tool_call>`). Values are bare text: one is a JSON
string where the tool's schema says the parameter is a string, and the JSON it reads as elsewhere
(numbers, booleans, objects), as llama-server's parser types them; a value that does not read as
JSON stays a string. The arguments are handed on as JSON text, one parameter at a time.
"""

from __future__ import annotations

import json
from typing import Any

FUNCTION, PARAMETER, PARAMETER_END, FUNCTION_END = "<function=", "<parameter=", "</parameter>", "</function>"


class XmlCall:
    """One call, fed text until its `</function>`; `properties`: the tool schemas' properties by tool name."""

    def __init__(self, properties: dict[str, dict[str, Any]]) -> None:
        self._properties = properties
        self._buffer = ""
        self.name: str | None = None
        self._key: str | None = None
        self._written = 0  # parameters written so far
        self._out = ""  # argument text not yet taken
        self.done = False

    def feed(self, text: str) -> None:
        """Take text; once done, what followed `</function>` is in `leftover`."""
        self._buffer += text
        while not self.done and self._advance():
            pass

    def _advance(self) -> bool:
        buffer = self._buffer
        if self.name is None:
            at = buffer.find(FUNCTION)
            end = buffer.find(">", at + len(FUNCTION)) if at >= 0 else -1
            if end < 0:
                return False
            self.name, self._buffer = buffer[at + len(FUNCTION) : end].strip(), buffer[end + 1 :]
            return True
        if self._key is None:
            return self._between_parameters()
        at = buffer.find(PARAMETER_END)
        if at < 0:
            return False
        self._write(self._key, buffer[:at])
        self._key, self._buffer = None, buffer[at + len(PARAMETER_END) :]
        return True

    def _between_parameters(self) -> bool:
        buffer = self._buffer.lstrip()
        if buffer.startswith(FUNCTION_END):
            self._out += "}" if self._written else "{}"
            self._buffer, self.done = buffer[len(FUNCTION_END) :], True
            return True
        if buffer.startswith(PARAMETER):
            end = buffer.find(">")
            if end < 0:
                return False
            self._key, self._buffer = buffer[len(PARAMETER) : end].strip(), buffer[end + 1 :]
            return True
        self._buffer = buffer
        return False

    def _write(self, key: str, raw: str) -> None:
        value = raw[1:] if raw.startswith("\n") else raw
        value = value[:-1] if value.endswith("\n") else value
        self._out += ("{" if not self._written else ", ") + json.dumps(key) + ": " + self._typed(key, value)
        self._written += 1

    def _typed(self, key: str, value: str) -> str:
        schema = self._properties.get(self.name or "", {}).get(key, {})
        if isinstance(schema, dict) and schema.get("type") == "string":
            return json.dumps(value, ensure_ascii=False)
        try:
            return json.dumps(json.loads(value), ensure_ascii=False)
        except ValueError:
            return json.dumps(value, ensure_ascii=False)

    def take_arguments(self) -> str:
        text, self._out = self._out, ""
        return text

    @property
    def leftover(self) -> str:
        """Text after `</function>` (the close marker and what follows), once done."""
        return self._buffer


def properties_by_tool(specs: Any) -> dict[str, dict[str, Any]]:
    """Each tool's parameter schemas by name, from ToolSpecs."""
    found: dict[str, dict[str, Any]] = {}
    for spec in specs:
        try:
            schema = json.loads(spec.parameters)
        except ValueError:
            continue
        if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
            found[spec.name] = schema["properties"]
    return found
