"""What a tool call gave back, as the model and the person see it: text, with notes for what is not text.

A result is data: it is shown and fed to the model, never acted on. Images and audio become a
note (the chat's models read text), an error stays an error, and a result over the limit is cut
with a note saying so to both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_RESULT_LIMIT = 16_000  # characters the model is given from one result
DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ToolResult:
    """`text` is what goes to the model as the tool message; `is_error`: the call failed."""

    text: str
    is_error: bool = False
    cut_from: int = 0  # the length before it was cut; 0: not cut
    notes: tuple[str, ...] = ()  # what the person should know besides the text (an image left out)
    # Where the text came from when it is someone else's words (a web page, a search engine's results): a
    # call the model makes after reading it is never run without the person's approval (app/chat/tool_round.py).
    sources: tuple[str, ...] = ()


def error_result(message: str) -> ToolResult:
    return ToolResult(message, is_error=True)


def cut(result: ToolResult, limit: int) -> ToolResult:
    """The result within `limit` characters, with a note at its end when it was longer."""
    if limit <= 0 or len(result.text) <= limit:
        return result
    note = f"[The result was cut to the first {limit:,} of its {len(result.text):,} characters.]"
    return ToolResult(f"{result.text[:limit]}\n\n{note}", result.is_error, len(result.text), result.notes + (note,),
                      result.sources)


def from_mcp(result: Any, limit: int = DEFAULT_RESULT_LIMIT) -> ToolResult:
    """An MCP CallToolResult (mcp_types) as one text."""
    parts: list[str] = []
    notes: list[str] = []
    for block in result.content:
        text, note = _block_text(block)
        if text:
            parts.append(text)
        if note:
            notes.append(note)
    if not parts and result.structured_content is not None:
        import json

        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts) or ("The tool failed without saying why." if result.is_error else "(no output)")
    return cut(ToolResult(text, bool(result.is_error), notes=tuple(notes)), limit)


def _block_text(block: Any) -> tuple[str, str]:
    """(text for the model, note for the person) of one content block."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text, ""
    if kind in ("image", "audio"):
        size = len(block.data) * 3 // 4  # base64
        note = f"[{kind} result ({block.mime_type}, {size:,} bytes) left out: the model reads text only]"
        return note, note
    if kind == "resource":
        resource = block.resource
        if hasattr(resource, "text"):
            return resource.text, ""
        note = f"[binary resource {resource.uri} left out]"
        return note, note
    if kind == "resource_link":
        return f"[resource: {block.uri}]", ""
    return f"[a {kind or 'unknown'} result the app cannot show]", ""
