"""The `memory` tool: notes the model saves for later chats ("the user uses metric units"), and reads back.

The notes live in the app's history database; the engine is handed an object that keeps them. The
person sees, edits, deletes and turns off each note in Settings, Memory; a note turned off is neither
listed to the model nor put into a prompt. A chat with memory switched off is not offered this tool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from engine.tools.builtin.base import BuiltinTool, ToolInputError, spec, text_argument
from engine.tools.results import ToolResult, error_result

NAME = "memory"
NOTE_LIMIT = 500
SPEC = spec(NAME, "Keep short notes about the user across chats. action save: remember `text` (a fact or "
            "preference the user wants kept); list: the notes kept; forget: delete the note `id`.",
            {"action": {"type": "string", "enum": ["save", "list", "forget"]},
             "text": {"type": "string", "description": "The note to save (save only)"},
             "id": {"type": "integer", "description": "The note to forget (forget only)"}},
            ["action"])


@dataclass(frozen=True)
class Note:
    id: int
    text: str
    enabled: bool = True


class NoteKeeper(Protocol):
    def save(self, text: str) -> Note: ...
    def notes(self) -> list[Note]: ...
    def forget(self, note_id: int) -> bool: ...


def notes_prompt(notes: list[Note]) -> str:
    """The notes as a system prompt adds them; "" when none is on."""
    lines = [f"- {note.text}" for note in notes if note.enabled]
    if not lines:
        return ""
    return "Notes kept about the user from earlier chats (the memory tool):\n" + "\n".join(lines)


@dataclass
class Memory:
    keeper: NoteKeeper

    def tool(self) -> BuiltinTool:
        return BuiltinTool(SPEC, self.run, "Memory across chats")

    def run(self, values: dict[str, Any]) -> ToolResult:
        action = values.get("action")
        if action == "save":
            note = self.keeper.save(text_argument(values, "text", limit=NOTE_LIMIT))
            return ToolResult(f"Saved as note {note.id}.")
        if action == "list":
            notes = [note for note in self.keeper.notes() if note.enabled]
            return ToolResult("\n".join(f"{note.id}: {note.text}" for note in notes) or "No notes are kept.")
        if action == "forget":
            note_id = values.get("id")
            if not isinstance(note_id, int) or isinstance(note_id, bool):
                raise ToolInputError('"id" should be the number of a note (see action list).')
            if self.keeper.forget(note_id):
                return ToolResult(f"Note {note_id} was deleted.")
            return error_result(f"There is no note {note_id}.")
        raise ToolInputError('"action" should be save, list or forget.')
