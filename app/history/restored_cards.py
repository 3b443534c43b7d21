"""What a restored message's card shows besides its text: a note for an answer cut short, how long it thought."""

from __future__ import annotations

from collections.abc import Sequence

from app.chat.tab import ChatTab
from app.history.records import StoredMessage

INTERRUPTED_NOTE = "(interrupted) — Regenerate to answer again"


def show_stored_notes(tab: ChatTab, path: Sequence[StoredMessage]) -> None:
    """The cards of `path` (as the tab shows them, top to bottom) get their notes and thinking summaries.

    A long chat opens with its last messages as cards (the earlier ones wait above); an early answer cut
    short is rare, and its note must show, so then every card is made."""
    hidden = tab.view.hidden_count()
    if any(message.state != "complete" for message in path[:hidden]):
        tab.view.show_all()
        hidden = tab.view.hidden_count()
    for card, message in zip(tab.view.cards(), path[hidden:]):
        if message.state != "complete":
            card.set_footer(INTERRUPTED_NOTE)
        if message.reasoning:
            seconds, tokens = message.timings.get("reasoning_s"), message.timings.get("reasoning_tokens")
            card.thinking_block.finish(
                float(seconds) if isinstance(seconds, (int, float)) else 0.0,
                int(tokens) if isinstance(tokens, int) else 0,
                interrupted=message.state != "complete",
            )
