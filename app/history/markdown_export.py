"""Export a chat as Markdown, for reading: the active branch under one heading per message.

A reasoning model's thinking is a folded <details> block above its answer, a message's pictures are
listed under it, a spoken message's dictation is a line under it, tool calls and results are fenced
code. Attached files are listed by name (their text is in the JSON export: app/history/json_export.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from app.history.chat_settings import exported_settings, system_prompt
from app.history.comparison import comparison_markdown, is_comparison
from app.history.images import markdown_lines
from app.history.parts import dictation_markdown
from app.history.records import ChatSnapshot
from engine.documents.extract import Document


def export_markdown(snapshot: ChatSnapshot, documents: Sequence[Document] = ()) -> str:
    """`documents`: the chat's attached files, listed by name (their text is in the JSON export)."""
    chat = snapshot.chat
    lines = [f"# {chat.title}", ""]
    if chat.model:
        lines.append(f"Model: `{chat.model}`  ")
    if exported_settings(chat.settings):
        settings = ", ".join(f"{key} = {value}" for key, value in exported_settings(chat.settings).items())
        lines.append(f"Settings: {settings}  ")
    if system_prompt(chat.settings):
        lines.append(f"System prompt: {' '.join(system_prompt(chat.settings).split())}  ")
    stamp = datetime.fromtimestamp(chat.created).strftime("%Y-%m-%d %H:%M")
    lines += [f"Started: {stamp}", ""]
    if documents:
        lines += ["Attached files:", ""]
        lines += [f"- {d.name} ({d.kind}, {len(d.pages)} page{'s' if len(d.pages) != 1 else ''})" for d in documents]
        lines.append("")
    if is_comparison(chat.settings):
        return "\n".join(lines + comparison_markdown(snapshot)).rstrip() + "\n"
    for message in snapshot.path():
        title = f"Tool result: {message.tool_name}" if message.role == "tool" else message.role.capitalize()
        lines += [f"## {title}", ""] + _thinking_markdown(message.reasoning) + markdown_lines(message.images)
        lines += _fenced(message.text, "") if message.role == "tool" else [message.text.rstrip(), ""]
        lines += dictation_markdown(message.dictation, message.text)
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
