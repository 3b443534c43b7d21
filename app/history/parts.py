"""A stored message's parts besides its text, as JSON: the tool calls it made and, for a spoken user message, what
the speech model heard (its Dictation); checked on the way in.

The database column, the JSON export and the import all use the one shape the OpenAI format has
for a call, flattened: `{"id", "name", "arguments"}` with `arguments` the JSON text of the object.
A dictation is `{"transcript", "language", "model", "seconds"}` (its column "" for a typed message).
"""

from __future__ import annotations

import json
from typing import Any

from app.history.records import HistoryImportError
from engine.protocol import Dictation, ToolCall


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


def dictation_to_json(dictation: Dictation | None) -> dict[str, Any] | None:
    if dictation is None:
        return None
    return {"transcript": dictation.transcript, "language": dictation.language, "model": dictation.model,
            "seconds": dictation.seconds}


def dump_dictation(dictation: Dictation | None) -> str:
    return "" if dictation is None else json.dumps(dictation_to_json(dictation), ensure_ascii=False)


def load_dictation(text: str) -> Dictation | None:
    """The column as stored by `dump_dictation`."""
    if not text:
        return None
    item = json.loads(text)
    return Dictation(item["transcript"], item["language"], item["model"], float(item["seconds"]))


def dictation_from_json(value: Any, where: str) -> Dictation | None:
    """An import file's "dictation"; a HistoryImportError names what is wrong."""
    if value is None:
        return None
    seconds = value.get("seconds", 0.0) if isinstance(value, dict) else None
    if not isinstance(value, dict) or not isinstance(value.get("transcript"), str) \
            or isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise HistoryImportError(f"{where}: \"dictation\" should be an object with a text \"transcript\" and a "
                                 "number \"seconds\".")
    return Dictation(value["transcript"], text_field(value, "language", where), text_field(value, "model", where),
                     float(seconds))


def dictation_markdown(dictation: Dictation | None, text: str) -> list[str]:
    """A line under a spoken message: that it was dictated, and what was heard where the person changed it."""
    if dictation is None:
        return []
    facts = ", ".join(fact for fact in (f"{dictation.seconds:.1f} s", dictation.language, dictation.model) if fact)
    heard = "" if dictation.transcript.strip() == text.strip() else f" Heard: \"{dictation.transcript}\""
    return [f"*Dictated ({facts}).{heard}*", ""]
