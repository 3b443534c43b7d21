"""Read a chat export back: `parse_import` checks the whole file before anything is written.

Our own JSON export (app/history/json_export.py) imports back without loss from its "hearth" tree;
any other OpenAI-style messages file imports as one straight branch, its leading system message as
the chat's system prompt. A reasoning model's thinking is read from a message's "reasoning" (or
llama-server's "reasoning_content"); pictures and dictation from the tree (app/history/images.py,
app/history/parts.py). The writers live beside it: JSON in json_export.py, Markdown in
markdown_export.py; both are named here too, where the store calls them, with `stored_documents`,
the chat's attached files that both exports carry.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.history.chat_settings import imported_settings, settings_of_export
from app.history.images import images_from_json
from app.history.json_export import FORMAT_VERSION, export_json
from app.history.markdown_export import export_markdown
from app.history.parts import dictation_from_json, text_field, tool_calls_from_json
from app.history.records import (
    ROLES,
    STATES,
    HistoryImportError,
    StoredMessage,
    active_path,
)
from engine.documents.extract import Document
from engine.documents.index import DocumentIndex, index_path
from engine.protocol import Dictation, ImagePart, ToolCall

__all__ = ["FORMAT_VERSION", "MAX_IMPORT_BYTES", "ImportedChat", "ImportedMessage", "export_json", "export_markdown",
           "parse_import", "read_import_file"]

MAX_IMPORT_BYTES = 200 * 1024 * 1024
_HINT = "Choose a JSON file exported by Hearth, or one with a \"messages\" list of {\"role\", \"content\"} objects."


@dataclass(frozen=True)
class ImportedMessage:
    key: str  # the id in the file; the store gives the message a new one
    parent_key: str | None
    role: str
    text: str
    state: str = "complete"
    created: float | None = None
    prompt_tokens: int | None = None
    generated_tokens: int | None = None
    timings: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    active_child_key: str | None = None
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    tool_name: str = ""
    images: tuple[ImagePart, ...] = ()
    dictation: Dictation | None = None


@dataclass(frozen=True)
class ImportedChat:
    title: str
    model: str
    settings: dict[str, Any]
    created: float | None
    updated: float | None
    messages: tuple[ImportedMessage, ...]  # parents before children
    active_root_key: str | None


def stored_documents(folder: Path, chat_id: str) -> list[Document]:
    """The chat's attached files as their index under `folder` holds them (none where it has no index)."""
    path = index_path(folder, chat_id)
    if not path.exists():
        return []
    index = DocumentIndex(path)
    try:
        return [index.document(entry.id) for entry in index.documents()]
    finally:
        index.close()


# ---------------------------------------------------------------- import


def read_import_file(path: str | Path) -> str:
    """The text of an import file, or a HistoryImportError that names it."""
    file = Path(path)
    try:
        if file.stat().st_size > MAX_IMPORT_BYTES:
            raise HistoryImportError(f"{file} is larger than {MAX_IMPORT_BYTES // 2**20} MB; it is not a chat export.", str(file))
        return file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise HistoryImportError(f"{file} is not UTF-8 text (byte {error.start}). {_HINT}", str(file)) from None
    except OSError as error:
        raise HistoryImportError(f"Cannot read {file}: {error.strerror or error}.", str(file)) from None


def parse_import(text: str, source: str = "The file") -> ImportedChat:
    """Check an import document completely; raises HistoryImportError naming the problem."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise HistoryImportError(f"{source} is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}). {_HINT}") from None
    if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
        raise HistoryImportError(f"{source} has no \"messages\" list at the top level. {_HINT}")
    title = _optional(document, "title", str, source, "")
    model = _optional(document, "model", str, source, "")
    in_file = _optional(document, "settings", dict, source, {})
    items, prompt = _without_system_prompt(document["messages"], source)
    first = len(document["messages"]) - len(items) + 1
    straight = [_openai_message(item, index, source, first) for index, item in enumerate(items, first)]
    tree = document.get("hearth")
    if tree is not None:
        parsed, root = _hearth_tree(tree, source)
        branch, expected = _branch_of(parsed, root), [(m.role, m.text) for m in straight]
        if branch == expected or prompt is not None and branch == [("system", prompt), *expected]:
            created = _number(tree.get("created"), f"{source}: hearth.created")
            updated = _number(tree.get("updated"), f"{source}: hearth.updated")
            settings = settings_of_export(tree.get("settings"), in_file, prompt, source)
            return ImportedChat(title, model, settings, created, updated, tuple(parsed), root)
        # "messages" was edited outside Hearth: it wins, the stale tree is dropped.
    return ImportedChat(title, model, imported_settings(in_file, prompt, source), None, None, tuple(straight), None)


def _without_system_prompt(items: list[Any], source: str) -> tuple[list[Any], str | None]:
    """The messages after a leading system message, and its text (None: there is none)."""
    if items and isinstance(items[0], dict) and items[0].get("role") == "system":
        return items[1:], _content(items[0].get("content"), f"{source}: message 1")
    return items, None


def _optional(document: dict[str, Any], key: str, kind: type, source: str, default: Any) -> Any:
    value = document.get(key, default)
    if value is None:
        return default
    if not isinstance(value, kind):
        raise HistoryImportError(f"{source}: \"{key}\" should be {'text' if kind is str else 'an object'}, not {type(value).__name__}.")
    return value


def _openai_message(item: Any, index: int, source: str, first: int = 1) -> ImportedMessage:
    where = f"{source}: message {index}"
    if not isinstance(item, dict):
        raise HistoryImportError(f"{where} is not an object with \"role\" and \"content\".")
    role = item.get("role")
    if role not in ROLES:
        raise HistoryImportError(f"{where} has role {role!r}; Hearth imports only system, user and assistant messages.")
    reasoning = text_field(item, "reasoning", where) or text_field(item, "reasoning_content", where)
    return ImportedMessage(str(index), str(index - 1) if index > first else None, role, _content(item.get("content"), where),
                           reasoning=reasoning)


def _content(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content):
        return "".join(part["text"] for part in content)  # the OpenAI "content parts" form, text only
    raise HistoryImportError(f"{where} has no text \"content\" (images and other parts cannot be imported).")


def _hearth_tree(tree: Any, source: str) -> tuple[list[ImportedMessage], str | None]:
    """The full tree of a Hearth export and its active root's id."""
    if not isinstance(tree, dict) or not isinstance(tree.get("messages"), list):
        raise HistoryImportError(f"{source}: the \"hearth\" section has no \"messages\" list; the file is damaged. {_HINT}")
    root = tree.get("active_root_id")
    if not (root is None or isinstance(root, str)):
        raise HistoryImportError(f"{source}: \"hearth.active_root_id\" should be text or null; the file is damaged.")
    seen: set[str] = set()
    parsed = []
    for index, item in enumerate(tree["messages"], 1):
        message = _tree_message(item, f"{source}: hearth message {index}", seen)
        seen.add(message.key)
        parsed.append(message)
    return parsed, root


def _tree_message(item: Any, where: str, seen: set[str]) -> ImportedMessage:
    if not isinstance(item, dict):
        raise HistoryImportError(f"{where} is not an object; the file is damaged.")
    key, parent = item.get("id"), item.get("parent_id")
    if not isinstance(key, str) or not key or key in seen:
        raise HistoryImportError(f"{where} has a missing or repeated \"id\"; the file is damaged.")
    if parent is not None and parent not in seen:
        raise HistoryImportError(f"{where} refers to a parent that does not come before it; the file is damaged.")
    role, state = item.get("role"), item.get("state", "complete")
    if role not in ROLES or state not in STATES:
        raise HistoryImportError(f"{where} has an unknown role {role!r} or state {state!r}.")
    timings = item.get("timings") or {}
    if not isinstance(timings, dict):
        raise HistoryImportError(f"{where}: \"timings\" should be an object.")
    finish, child = item.get("finish_reason"), item.get("active_child_id")
    if not (finish is None or isinstance(finish, str)) or not (child is None or isinstance(child, str)):
        raise HistoryImportError(f"{where}: \"finish_reason\" and \"active_child_id\" should be text or null.")
    return ImportedMessage(
        key, parent, role, _content(item.get("content"), where),
        "interrupted" if state == "streaming" else state,  # nothing streams into an imported chat
        _number(item.get("created"), f"{where}: \"created\""),
        _count(item.get("prompt_tokens"), where), _count(item.get("generated_tokens"), where),
        timings, finish, child, text_field(item, "reasoning", where),
        tool_calls_from_json(item.get("tool_calls"), where), text_field(item, "tool_call_id", where),
        text_field(item, "tool_name", where), images_from_json(item.get("images"), where),
        dictation_from_json(item.get("dictation"), where),
    )


def _number(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise HistoryImportError(f"{where} should be a number (seconds since 1970).")
    return float(value)


def _count(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise HistoryImportError(f"{where}: token counts should be whole numbers.")
    return value


def _branch_of(parsed: list[ImportedMessage], root: str | None) -> list[tuple[str, str]]:
    """The active branch of a parsed tree, as (role, text), by the same rule as the store."""
    as_stored = [
        StoredMessage(m.key, "", m.parent_key, m.role, m.text, m.state, 0.0, active_child_id=m.active_child_key)  # type: ignore[arg-type]
        for m in parsed
    ]
    return [(m.role, m.text) for m in active_path(as_stored, root)]
