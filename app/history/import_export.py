"""Export a chat to Markdown or JSON, and check an import file before it is stored.

The JSON is the OpenAI chat format: top-level "model" and "messages" (the
active branch as role/content pairs), plus "title" and "settings". A "hearth"
object carries what that format cannot hold (every branch, states, token
counts, timings, tool calls), so our own export imports back without loss; any
other OpenAI-style messages file imports as one straight branch. A reasoning
model's thinking is the field "reasoning" of a message in both (an import also
reads llama-server's "reasoning_content"); in Markdown it is a folded
<details> block above the answer. A message's pictures are listed under it in
Markdown and carried as base64 in the "hearth" tree (app/history/images.py). `parse_import` checks the whole file before
anything is written.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from app.history.images import images_from_json, images_to_json, markdown_lines
from app.history.parts import text_field, tool_calls_from_json, tool_calls_to_json
from app.history.records import ROLES, STATES, ChatSnapshot, HistoryImportError, StoredMessage, active_path
from engine.documents.extract import Document
from engine.protocol import ImagePart, ToolCall

FORMAT_VERSION = 1
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


@dataclass(frozen=True)
class ImportedChat:
    title: str
    model: str
    settings: dict[str, Any]
    created: float | None
    updated: float | None
    messages: tuple[ImportedMessage, ...]  # parents before children
    active_root_key: str | None


# ---------------------------------------------------------------- export


def export_json(snapshot: ChatSnapshot, documents: Sequence[Document] = ()) -> str:
    """`documents`: the chat's attached files, exported with their text."""
    chat = snapshot.chat
    document = {
        "model": chat.model,
        "messages": [_openai_record(m) for m in snapshot.path()],
        "title": chat.title,
        "settings": chat.settings,
        "hearth": {
            "format": FORMAT_VERSION,
            "created": chat.created,
            "updated": chat.updated,
            "active_root_id": chat.active_root_id,
            "messages": [_message_record(m) for m in snapshot.messages],
            "documents": [{"name": d.name, "kind": d.kind,
                           "pages": [{"number": p.number, "text": p.text} for p in d.pages]} for d in documents],
        },
    }
    return json.dumps(document, ensure_ascii=False, indent=2)


def _openai_record(message: StoredMessage) -> dict[str, Any]:
    """role and content, and the thinking only where there is some (other readers expect the bare pair)."""
    record: dict[str, Any] = {"role": message.role, "content": message.text}
    if message.reasoning:
        record["reasoning"] = message.reasoning
    if message.tool_calls:  # OpenAI's shape, so other readers take the calls as they are
        record["tool_calls"] = [{"id": call.id, "type": "function",
                                 "function": {"name": call.name, "arguments": call.arguments}}
                                for call in message.tool_calls]
    if message.role == "tool":
        record.update(tool_call_id=message.tool_call_id, name=message.tool_name)
    return record


def _message_record(message: StoredMessage) -> dict[str, Any]:
    return {
        "id": message.id,
        "parent_id": message.parent_id,
        "role": message.role,
        "content": message.text,
        "state": message.state,
        "created": message.created,
        "prompt_tokens": message.prompt_tokens,
        "generated_tokens": message.generated_tokens,
        "timings": message.timings,
        "finish_reason": message.finish_reason,
        "active_child_id": message.active_child_id,
        "reasoning": message.reasoning,
        "tool_calls": tool_calls_to_json(message.tool_calls),
        "tool_call_id": message.tool_call_id,
        "tool_name": message.tool_name,
        "images": images_to_json(message.images),
    }


def export_markdown(snapshot: ChatSnapshot, documents: Sequence[Document] = ()) -> str:
    """`documents`: the chat's attached files, listed by name (their text is in the JSON export)."""
    chat = snapshot.chat
    lines = [f"# {chat.title}", ""]
    if chat.model:
        lines.append(f"Model: `{chat.model}`  ")
    if chat.settings:
        settings = ", ".join(f"{key} = {value}" for key, value in sorted(chat.settings.items()))
        lines.append(f"Settings: {settings}  ")
    stamp = datetime.fromtimestamp(chat.created).strftime("%Y-%m-%d %H:%M")
    lines += [f"Started: {stamp}", ""]
    if documents:
        lines += ["Attached files:", ""]
        lines += [f"- {d.name} ({d.kind}, {len(d.pages)} page{'s' if len(d.pages) != 1 else ''})" for d in documents]
        lines.append("")
    for message in snapshot.path():
        title = f"Tool result: {message.tool_name}" if message.role == "tool" else message.role.capitalize()
        lines += [f"## {title}", ""] + _thinking_markdown(message.reasoning) + markdown_lines(message.images)
        lines += _fenced(message.text, "") if message.role == "tool" else [message.text.rstrip(), ""]
        for call in message.tool_calls:
            lines += [f"**Tool call** `{call.name}`:", ""] + _fenced(call.arguments, "json")
        if message.state != "complete":
            lines += [f"*({message.state})*", ""]
    return "\n".join(lines).rstrip() + "\n"


def _fenced(text: str, language: str) -> list[str]:
    """A code block whose fence is longer than any run of backticks in `text`, so it cannot end early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + language, text.rstrip(), fence, ""]


def _thinking_markdown(reasoning: str) -> list[str]:
    """A folded block (GitHub and most viewers fold <details>); blank lines let Markdown render inside it."""
    if not reasoning.strip():
        return []
    body = reasoning.strip().replace("</details>", "&lt;/details>")  # the thinking cannot close the block early
    return ["<details><summary>Thinking</summary>", "", body, "", "</details>", ""]


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
    settings = _optional(document, "settings", dict, source, {})
    straight = [_openai_message(item, index, source) for index, item in enumerate(document["messages"], 1)]
    tree = document.get("hearth")
    if tree is not None:
        parsed, root = _hearth_tree(tree, source)
        if _branch_of(parsed, root) == [(m.role, m.text) for m in straight]:
            created = _number(tree.get("created"), f"{source}: hearth.created")
            updated = _number(tree.get("updated"), f"{source}: hearth.updated")
            return ImportedChat(title, model, settings, created, updated, tuple(parsed), root)
        # "messages" was edited outside Hearth: it wins, the stale tree is dropped.
    return ImportedChat(title, model, settings, None, None, tuple(straight), None)


def _optional(document: dict[str, Any], key: str, kind: type, source: str, default: Any) -> Any:
    value = document.get(key, default)
    if value is None:
        return default
    if not isinstance(value, kind):
        raise HistoryImportError(f"{source}: \"{key}\" should be {'text' if kind is str else 'an object'}, not {type(value).__name__}.")
    return value


def _openai_message(item: Any, index: int, source: str) -> ImportedMessage:
    where = f"{source}: message {index}"
    if not isinstance(item, dict):
        raise HistoryImportError(f"{where} is not an object with \"role\" and \"content\".")
    role = item.get("role")
    if role not in ROLES:
        raise HistoryImportError(f"{where} has role {role!r}; Hearth imports only system, user and assistant messages.")
    reasoning = text_field(item, "reasoning", where) or text_field(item, "reasoning_content", where)
    return ImportedMessage(str(index), str(index - 1) if index > 1 else None, role, _content(item.get("content"), where),
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
