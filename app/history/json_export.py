"""Export a chat as JSON: the OpenAI chat format, with a "hearth" tree that imports back without loss.

Top-level "model" and "messages" (the chat's system prompt as a leading "system" message, then the
active branch as role/content pairs), plus "title" and "settings" (the chat's sampling values:
app/history/chat_settings.py); a comparison adds "compare", each pane's model and messages. The
"hearth" object carries what that format cannot hold (every branch, states, token counts, timings,
tool calls, pictures as base64, dictation, the stored settings, the attached files' text), which
app/history/import_export.py reads back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from app.history.chat_settings import exported_settings, system_prompt
from app.history.comparison import exported_panes, is_comparison
from app.history.images import images_to_json
from app.history.parts import dictation_to_json, tool_calls_to_json
from app.history.records import ChatSnapshot, StoredMessage
from engine.documents.extract import Document

FORMAT_VERSION = 1


def export_json(snapshot: ChatSnapshot, documents: Sequence[Document] = ()) -> str:
    """`documents`: the chat's attached files, exported with their text."""
    chat = snapshot.chat
    path = snapshot.path()
    prompt = system_prompt(chat.settings)
    system = [{"role": "system", "content": prompt}] if prompt and not (path and path[0].role == "system") else []
    document = {
        "model": chat.model,
        "messages": system + [_openai_record(m) for m in path],
        "title": chat.title,
        "settings": exported_settings(chat.settings),
        "hearth": {
            "format": FORMAT_VERSION,
            "created": chat.created,
            "updated": chat.updated,
            "settings": chat.settings,
            "active_root_id": chat.active_root_id,
            "messages": [_message_record(m) for m in snapshot.messages],
            "documents": [{"name": d.name, "kind": d.kind,
                           "pages": [{"number": p.number, "text": p.text} for p in d.pages]} for d in documents],
        },
    }
    if is_comparison(chat.settings):  # Compare…: each pane's model and answers (app/history/comparison.py)
        document["compare"] = exported_panes(snapshot)
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
        "dictation": dictation_to_json(message.dictation),  # null: typed
    }
