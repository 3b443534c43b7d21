"""A message's Markdown cut into the pieces the view shows one widget each (no Qt here).

Fenced code blocks become code segments (a widget that scrolls sideways, with its
own copy button); the text between them is cut again at blank lines that start a
new top-level block, so a streaming answer re-renders only its last paragraph and
every earlier piece keeps the widget it was rendered into. A list or an indented
continuation is never cut: Markdown has to see it whole (a table has no blank lines).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)[^`]*$")
LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s")


@dataclass(frozen=True)
class Segment:
    kind: Literal["text", "code"]
    text: str  # Markdown for "text", the raw code for "code"
    language: str = ""
    closed: bool = True  # False: a code block still streaming (its closing fence not written yet)
    start: int = field(default=0, compare=False)  # where it begins in the Markdown


def split_segments(markdown: str, base: int = 0) -> list[Segment]:
    """Text and code segments in order; an unclosed fence makes a code segment that is still open.

    Only the last segment can change when text is appended: everything before it is final, so a
    growing answer re-splits just from `segments[-1].start` (`base`: where `markdown` begins).
    """
    segments: list[Segment] = []
    lines = markdown.split("\n")
    starts = [base]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    text_from, index = 0, 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        segments += _text_segments(lines[text_from:index], starts[text_from:index])
        index, segment = _code_segment(lines, index, opening, starts[index])
        segments.append(segment)
        text_from = index
    segments += _text_segments(lines[text_from:], starts[text_from:])
    return segments


def extend_segments(previous: list[Segment], old: str, new: str) -> list[Segment]:
    """The segments of `new`, re-splitting only the last one's part when `new` only appends to `old`."""
    if len(previous) < 2 or not new.startswith(old):
        return split_segments(new)
    start = previous[-1].start
    return previous[:-1] + split_segments(new[start:], start)


def _code_segment(lines: list[str], start: int, opening: re.Match[str], offset: int) -> tuple[int, Segment]:
    """The code from the line after `start` to its closing fence; returns the index after it."""
    fence, indent = opening["fence"], len(opening["indent"])
    body: list[str] = []
    for index in range(start + 1, len(lines)):
        stripped = lines[index].strip()
        if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
            return index + 1, Segment("code", "\n".join(body), opening["info"].lower(), start=offset)
        body.append(_dedent(lines[index], indent))
    # Still streaming: a line just begun is not shown as an empty last line.
    return len(lines), Segment("code", "\n".join(body).removesuffix("\n"), opening["info"].lower(), closed=False,
                               start=offset)


def _dedent(line: str, indent: int) -> str:
    """A fence indented inside a list item: its code lines carry the same indent."""
    cut = min(indent, len(line) - len(line.lstrip(" \t")))
    return line[cut:]


def _text_segments(lines: list[str], starts: list[int]) -> list[Segment]:
    """Cut at a blank line whose next line starts a new top-level block."""
    pieces: list[list[str]] = [[]]
    piece_starts = [starts[0] if starts else 0]
    in_list = False  # the piece so far ends in a list: its next item or indented line belongs to it
    for index, line in enumerate(lines):
        if not line.strip():
            pieces[-1].append(line)
            continue
        continues = line[0].isspace() or (in_list and LIST_ITEM.match(line) is not None)
        if index > 0 and not lines[index - 1].strip() and not continues and any(p.strip() for p in pieces[-1]):
            pieces.append([])
            piece_starts.append(starts[index])
        pieces[-1].append(line)
        in_list = LIST_ITEM.match(line) is not None or (in_list and line[0].isspace())
    texts = ["\n".join(piece).strip("\n") for piece in pieces]
    return [Segment("text", text, start=start) for text, start in zip(texts, piece_starts) if text.strip()]
