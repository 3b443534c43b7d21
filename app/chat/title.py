"""A chat's title from its first message: one rule for the tab and for the stored chat.

The tab shows it as soon as the question is sent and the store writes the same
title, so a tab is called the same before and after a restart. A name the user
types is kept as typed; the tab strip elides what does not fit.
"""

from __future__ import annotations

import re

DEFAULT_TITLE = "New chat"
TITLE_LENGTH = 48


def title_from_text(text: str, limit: int = TITLE_LENGTH) -> str:
    """The first non-empty line without Markdown marks, cut at a word and ended with "…" when too long."""
    line = next((part for part in text.splitlines() if part.strip()), "")
    line = re.sub(r"\s+", " ", line).strip().strip("#>*-` ").strip()
    if not line:
        return DEFAULT_TITLE
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0] if " " in line[:limit] else line[:limit]
    return cut.rstrip(" ,.;:") + "…"


def title_from_user(text: str) -> str:
    """A name typed for the chat, with its runs of white space made single."""
    return " ".join(text.split())
