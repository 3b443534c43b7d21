"""Cutting a document's pages into chunks for the index: at headings and paragraphs, with overlap.

A chunk never crosses a page, so the page it names is exact. Paragraphs are packed into a chunk up
to `chunk_chars`; a heading starts a new chunk and is carried in its `heading`; the last paragraph of
a chunk (up to `overlap_chars`) starts the next one, so a sentence cut at a boundary is whole in one
of the two. A paragraph longer than a chunk (a text file without blank lines) is cut at lines, then
at spaces.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from engine.documents.extract import Page

CHUNK_CHARS = 1200  # ~300 tokens of English: several chunks fit a small model's context with the question
OVERLAP_CHARS = 200
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_HEADING = re.compile(r"^#{1,6} \S")


@dataclass(frozen=True)
class Chunk:
    page: int
    ordinal: int  # its place within the page, from 0
    heading: str  # the nearest heading above it on the page, or ""
    text: str


def chunk_page(page: Page, chunk_chars: int = CHUNK_CHARS, overlap_chars: int = OVERLAP_CHARS) -> list[Chunk]:
    chunks: list[Chunk] = []
    current: list[str] = []
    heading, fresh = "", False  # fresh: holds more than the overlap carried over
    for paragraph in _paragraphs(page.text, chunk_chars - overlap_chars):
        is_heading = bool(_HEADING.match(paragraph)) and "\n" not in paragraph
        size = sum(len(part) + 2 for part in current)
        if fresh and (is_heading or size + len(paragraph) > chunk_chars):
            chunks.append(Chunk(page.number, len(chunks), heading, "\n\n".join(current)))
            current = [] if is_heading else [_tail(current[-1], overlap_chars)]
        if is_heading:
            heading = paragraph.lstrip("#").strip()
        current.append(paragraph)
        fresh = True
    if fresh:
        chunks.append(Chunk(page.number, len(chunks), heading, "\n\n".join(current)))
    return chunks


def _tail(text: str, limit: int) -> str:
    """The end of `text`, at most `limit` characters, starting at a word."""
    if len(text) <= limit:
        return text
    start = text.find(" ", len(text) - limit)
    return text[start + 1:] if start != -1 else text[-limit:]


def _paragraphs(text: str, limit: int) -> Iterator[str]:
    for paragraph in _PARAGRAPH_BREAK.split(text):
        paragraph = paragraph.strip()
        if paragraph:
            yield from _split_long(paragraph, limit)


def _split_long(text: str, limit: int) -> Iterator[str]:
    """Pieces of at most `limit` characters, cut at a line end, else at a space, else anywhere.

    Offsets, not slices of the rest: a 5 MB file without blank lines is one paragraph."""
    start = 0
    while len(text) - start > limit:
        end = start + limit
        cut = text.rfind("\n", start, end)
        if cut < start + limit // 2:
            cut = text.rfind(" ", start, end)
        if cut < start + limit // 2:
            cut = end
        piece = text[start:cut].strip()
        if piece:
            yield piece
        start = cut
    if text[start:].strip():
        yield text[start:].strip()
