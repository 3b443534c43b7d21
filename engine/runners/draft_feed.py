"""What the two draft models (llama.cpp's and transformers') share: which chats draft, and how each chat's
tokens are fed to the draft model's cache (its longest common prefix kept, the rest in chunks of a batch)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

Want = tuple[int, Sequence[int], int]  # (slot, the chat's tokens so far, most tokens to draft)
Feed = tuple[int, list[int]]  # (slot, tokens to feed after what its cache holds)


def drafting(wants: Sequence[Want], n_vocab: int) -> list[int]:
    """The wants that draft. A chat with pictures has rows the draft model cannot read (ids past its
    vocabulary): it drafts nothing."""
    return [index for index, (_, tokens, count) in enumerate(wants) if count > 0 and tokens and max(tokens) < n_vocab]


def reads_prompt(wants: Sequence[Want], going: Sequence[int], cached: Sequence[list[int]]) -> bool:
    """Whether this round reads more than the last turn's few tokens for some chat (its time is the prompt's)."""
    return any(len(wants[index][1]) - len(cached[wants[index][0]]) > 2 for index in going)


def kept_prefix(cached: Sequence[int], tokens: Sequence[int], keep_last: bool) -> int:
    """How much of a slot's cache stays: its longest common prefix with `tokens`, short of the last token where
    `keep_last` asks to feed it again (its logits give the next guess)."""
    keep, limit = 0, min(len(cached), len(tokens) - 1 if keep_last else len(tokens))
    while keep < limit and cached[keep] == tokens[keep]:
        keep += 1
    return keep


def in_chunks(pending: list[Feed], room: int) -> Iterator[tuple[list[Feed], set[int]]]:
    """The feeds in chunks of at most `room` tokens, each with the slots whose last token is in it."""
    while pending:
        left, chunk, rest = room, [], []
        for slot, tokens in pending:
            part = tokens[: max(left, 0)]
            left -= len(part)
            if part:
                chunk.append((slot, part))
            if len(part) < len(tokens):
                rest.append((slot, tokens[len(part):]))
        yield chunk, {slot for slot, _ in chunk} - {slot for slot, _ in rest}
        pending = rest
