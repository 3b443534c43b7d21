"""A stored message's parts besides its text, as JSON: the tool calls it made, checked on the way in.

The database column, the JSON export and the import all use the one shape the OpenAI format has
for a call, flattened: `{"id", "name", "arguments"}` with `arguments` the JSON text of the object.
"""

from __future__ import annotations

import json
from typing import Any

from app.history.records import HistoryImportError
from engine.protocol import ToolCall


def tool_calls_to_json(calls: tuple[ToolCall, ...]) -> list[dict[str, str]]:
    return [{"id": call.id, "name": call.name, "arguments": call.arguments} for call in calls]


def dump_tool_calls(calls: tuple[ToolCall, ...]) -> str:
    return json.dumps(tool_calls_to_json(calls), ensure_ascii=False)


def load_tool_calls(text: str) -> tuple[ToolCall, ...]:
    """The column as stored by `dump_tool_calls`; our own writes only, so no checks beyond the shape."""
    return tuple(ToolCall(item["id"], item["name"], item["arguments"]) for item in json.loads(text or "[]"))


def tool_calls_from_json(value: Any, where: str) -> tuple[ToolCall, ...]:
    """An import file's "tool_calls"; a HistoryImportError names what is wrong."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise HistoryImportError(f"{where}: \"tool_calls\" should be a list.")
    calls = []
    for number, item in enumerate(value, 1):
        fields = [item.get(key) for key in ("id", "name", "arguments")] if isinstance(item, dict) else []
        texts = [field for field in fields if isinstance(field, str)]
        if len(texts) != 3:
            raise HistoryImportError(f"{where}: tool call {number} should have text \"id\", \"name\" and \"arguments\".")
        calls.append(ToolCall(*texts))
    return tuple(calls)


def text_field(item: dict[str, Any], key: str, where: str) -> str:
    """An optional text field of an imported message ("" when absent or null)."""
    value = item.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise HistoryImportError(f"{where}: \"{key}\" should be text, not {type(value).__name__}.")
    return value
