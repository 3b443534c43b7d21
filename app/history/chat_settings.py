"""A chat's own settings: as they are stored with it, and as an export carries them.

Stored (the chat's settings JSON, beside its Think choice and model): the chat panel's
changes under "panel" (what the user set in this chat; its panel gets them back when
the chat is reopened), and the values in effect when the chat was last changed or
answered: "system_prompt" and the sampling fields by SamplingParams name.

Exported (the OpenAI chat format): the system prompt is a leading "system" message and
"settings" holds the sampling values by the names OpenAI-style servers take
(`max_tokens` for max_new_tokens; top_k, min_p, repeat_penalty as llama.cpp's server
names them). The stored object itself travels in the "hearth" section, so our own
export imports back as it was; any other file's settings and leading system message
become the imported chat's own.
"""

from __future__ import annotations

import math
from typing import Any

from app.history.records import HistoryImportError

SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed", "max_new_tokens")
EXPORT_NAMES = {"max_new_tokens": "max_tokens"}
WHOLE_NUMBERS = ("top_k", "seed", "max_new_tokens")
PANEL = "panel"  # the stored key of the panel's changes


def exported_settings(stored: dict[str, Any]) -> dict[str, Any]:
    """The sampling values in effect, by their OpenAI-style names."""
    return {EXPORT_NAMES.get(key, key): stored[key] for key in SAMPLING_KEYS if key in stored}


def system_prompt(stored: dict[str, Any]) -> str:
    value = stored.get("system_prompt", "")
    return value if isinstance(value, str) else ""


def imported_settings(in_file: dict[str, Any], prompt: str | None, source: str) -> dict[str, Any]:
    """A file's settings and leading system message as the chat's own (its panel shows them as its changes)."""
    values: dict[str, Any] = {}
    for key in SAMPLING_KEYS:
        name = EXPORT_NAMES.get(key, key)
        value = in_file.get(name, in_file.get(key))  # an older Hearth export used max_new_tokens
        if value is not None or key == "seed" and name in in_file:
            values[key] = _checked(key, value, f'{source}: "settings.{name}"')
    if prompt is not None:
        values["system_prompt"] = prompt
    return {**values, PANEL: dict(values)} if values else {}


def settings_of_export(stored: Any, in_file: dict[str, Any], prompt: str | None, source: str) -> dict[str, Any]:
    """Our own export's stored settings; where its "settings" or system message were edited, the edit wins."""
    if not isinstance(stored, dict):
        return in_file  # an export from before the settings were kept in "hearth"
    if exported_settings(stored) == in_file and system_prompt(stored) == (prompt or ""):
        return stored
    edited = imported_settings(in_file, prompt, source)
    return {**stored, **edited, PANEL: {**stored.get(PANEL, {}), **edited.get(PANEL, {})}}


def _checked(key: str, value: Any, where: str) -> Any:
    if key == "seed" and value is None:
        return None  # a random seed
    whole = key in WHOLE_NUMBERS
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or whole and value != int(value):
        raise HistoryImportError(f"{where} should be {'a whole number' if whole else 'a number'}, not {value!r}.")
    return int(value) if whole else float(value)
