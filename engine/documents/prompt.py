"""The user message's text built from the attached documents and the question.

Each document that fits the room left in the context (after the conversation and a reserve for the
answer) goes in whole, with its name, in the order attached. The others are searched: their best
chunks for the question go in, numbered [1], [2], ... with file and page, as many as the room still
holds. Token counts are the caller's `count_tokens` (the model's own tokenizer in the window), so
this module needs no model and is tested with any counter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.documents.retrieval import Hit

CountTokens = Callable[[str], int]
Search = Callable[[str, Sequence[int], int], Sequence[Hit]]  # question, document ids, how many
MAX_CHUNKS = 8
_EXCERPTS_HEADER = ("Excerpts from the attached files, searched for this message. "
                    "Cite the ones you use by their numbers, like [1].")
_EXCERPTS_END = "--- end of excerpts ---"  # where the question starts: the window shows it alone


@dataclass(frozen=True)
class Attachment:
    doc_id: int
    name: str
    pages: int
    text: str  # the whole extracted text
    tokens: int  # the whole text's count in the model's tokenizer


@dataclass(frozen=True)
class Citation:
    number: int
    document: str
    page: int
    pages: int  # how many the document has: a one-page file is cited by name alone
    chunk_id: int
    text: str

    @property
    def label(self) -> str:
        return self.document if self.pages <= 1 else f"{self.document}, page {self.page}"


@dataclass(frozen=True)
class AssembledPrompt:
    text: str
    whole: tuple[str, ...]  # names of the documents put in whole
    searched: tuple[str, ...]  # names of those searched
    citations: tuple[Citation, ...]


def room_left(context_tokens: int, conversation_tokens: int, answer_reserve: int) -> int:
    return max(0, context_tokens - conversation_tokens - answer_reserve)


def whole_block(attachment: Attachment) -> str:
    return f"--- {attachment.name} ---\n{attachment.text.strip()}\n--- end of {attachment.name} ---"


def plan(attachments: Sequence[Attachment], room: int, question_tokens: int = 0) -> tuple[list[Attachment], list[Attachment]]:
    """Which go in whole (in order, while they fit) and which are searched. The chips show the same."""
    whole, searched = [], []
    left = room - question_tokens
    for attachment in attachments:
        cost = attachment.tokens + _BLOCK_OVERHEAD_TOKENS
        if cost <= left:
            whole.append(attachment)
            left -= cost
        else:
            searched.append(attachment)
    return whole, searched


_BLOCK_OVERHEAD_TOKENS = 24  # the name lines around a whole document, counted generously


def assemble(question: str, attachments: Sequence[Attachment], room: int, count_tokens: CountTokens,
             search: Search, max_chunks: int = MAX_CHUNKS) -> AssembledPrompt:
    """The text of the user message: whole documents, then numbered excerpts, then the question."""
    if not attachments:
        return AssembledPrompt(question, (), (), ())
    whole, searched = plan(attachments, room, count_tokens(question))
    blocks = [whole_block(attachment) for attachment in whole]
    left = room - count_tokens("\n\n".join([*blocks, question])) - count_tokens(_EXCERPTS_HEADER + _EXCERPTS_END)
    citations = _citations(question, searched, left, count_tokens, search, max_chunks) if searched else []
    if citations:
        excerpts = "\n\n".join(_excerpt(citation) for citation in citations)
        blocks.append(f"{_EXCERPTS_HEADER}\n\n{excerpts}\n\n{_EXCERPTS_END}")
    blocks.append(question)
    return AssembledPrompt("\n\n".join(blocks), tuple(a.name for a in whole), tuple(a.name for a in searched),
                           tuple(citations))


def _excerpt(citation: Citation) -> str:
    return f"[{citation.number}] {citation.label}\n{citation.text.strip()}"


def _citations(question: str, searched: Sequence[Attachment], left: int, count_tokens: CountTokens,
               search: Search, max_chunks: int) -> list[Citation]:
    pages = {attachment.doc_id: attachment.pages for attachment in searched}
    citations: list[Citation] = []
    for hit in search(question, list(pages), max_chunks):
        citation = Citation(len(citations) + 1, hit.document, hit.page, pages.get(hit.doc_id, 0), hit.chunk_id, hit.text)
        cost = count_tokens(_excerpt(citation)) + 2
        if cost > left:
            break  # the best ones first: a lower-ranked chunk never pushes out a better one
        citations.append(citation)
        left -= cost
    return citations


# An excerpt's first line: after a blank line, its number and the file's name (with its suffix), and the page.
_EXCERPT_LINE = re.compile(r"(?:\A|\n\n)\[(\d+)\] ([^\n]+?\.\w{1,8}(?:, page \d+)?)\n")


def read_excerpts(text: str) -> dict[int, tuple[str, str]]:
    """The numbered excerpts of a user message `assemble` built: number -> (label, the chunk's text).

    Read back from the message itself, so a chat reopened from the history cites as it did. Each excerpt
    runs to the next number's line (a chunk with a paragraph like "[2] notes.md" of its own would be cut
    there), the last one to the end line (in a message stored before there was one: to the last blank line).
    """
    start = text.find(_EXCERPTS_HEADER)
    if start < 0:
        return {}
    body = text[start + len(_EXCERPTS_HEADER):].removeprefix("\n\n")
    end = body.find("\n\n" + _EXCERPTS_END)
    body = body[:end] if end >= 0 else body[:body.rstrip().rfind("\n\n")]  # older messages: the question last
    starts: list[re.Match[str]] = []
    for match in _EXCERPT_LINE.finditer(body):
        if int(match.group(1)) == len(starts) + 1:  # a "[7] ..." line inside a chunk is not an excerpt's start
            starts.append(match)
    ends = [match.start() for match in starts[1:]] + [len(body)]
    return {number: (match.group(2), body[match.end():end].strip())
            for number, (match, end) in enumerate(zip(starts, ends), 1)}


_WHOLE_BLOCK = re.compile(r"--- (?P<name>[^\n]+) ---\n.*?\n--- end of (?P=name) ---(?:\n\n|\Z)", re.DOTALL)


def split_message(text: str) -> tuple[str, list[tuple[str, str]]]:
    """A user message `assemble` built, as the question and its files: [(name, "whole" or "searched")].

    A message without files is its own question; the window shows the question with the files as chips.
    """
    files: list[tuple[str, str]] = []
    position = 0
    while (block := _WHOLE_BLOCK.match(text, position)) is not None:
        files.append((block.group("name"), "whole"))
        position = block.end()
    rest = text[position:]
    if rest.startswith(_EXCERPTS_HEADER):
        for label, _ in read_excerpts(rest).values():
            name = re.sub(r", page \d+$", "", label)
            if (name, "searched") not in files:
                files.append((name, "searched"))
        end = rest.find("\n\n" + _EXCERPTS_END + "\n\n")
        rest = rest[end + len(_EXCERPTS_END) + 4:] if end >= 0 else rest[rest.rstrip().rfind("\n\n") + 2:]
    return (rest if files else text), files
