"""Finding markers in streamed text, and holding back what could still become one."""

from __future__ import annotations

from collections.abc import Iterable


def earliest(text: str, markers: Iterable[str]) -> tuple[int, str] | None:
    """The first whole marker in `text` (the longest where two start at the same place)."""
    best: tuple[int, str] | None = None
    for marker in markers:
        if not marker:
            continue
        at = text.find(marker)
        if at >= 0 and (best is None or at < best[0] or (at == best[0] and len(marker) > len(best[1]))):
            best = (at, marker)
    return best


def partial_tail(text: str, markers: Iterable[str]) -> int:
    """Length of the longest end of `text` that is the start of a marker (held back until known)."""
    longest = 0
    for marker in markers:
        for size in range(min(len(marker) - 1, len(text)), longest, -1):
            if marker.startswith(text[-size:]):
                longest = size
                break
    return longest


def json_call_start(text: str, name_key: str) -> bool | None:
    """Whether `text` opens a call object {"<name_key>": "...: True yes, False no, None not yet known.

    Formats whose calls have no marker of their own (Llama 3.x) begin a call with this very text.
    """
    pieces = ["{", f'"{name_key}"', ":", '"']
    position = 0
    for piece in pieces:
        while position < len(text) and text[position].isspace():
            position += 1
        rest = text[position : position + len(piece)]
        if rest != piece:
            return None if piece.startswith(rest) and position + len(rest) == len(text) else False
        position += len(piece)
    return True
