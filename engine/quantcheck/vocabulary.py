"""A model's tokenizer, as far as comparing two models needs it to be the same.

Comparing token distributions only means something when token i is the same
piece of text in both models. Each backend reads the token texts (llama.cpp:
a vocabulary-only load, no weights; transformers: the tokenizer files), and
the check refuses a candidate whose tokens or special tokens differ. The
reference text must also tokenize to the same ids in both (that covers merge
rules, which neither library exposes).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.quantcheck.errors import TokenizerMismatch


@dataclass(frozen=True)
class Vocabulary:
    tokens: tuple[bytes, ...]  # the text of token i
    special: tuple[tuple[str, int], ...] = ()  # ("bos", 1), ("eos", 2) ...

    def difference(self, other: Vocabulary) -> str:
        """'' when both are the same; otherwise what differs, in a few words."""
        if len(self.tokens) != len(other.tokens):
            return f"a vocabulary of {len(other.tokens):,} tokens, the reference's has {len(self.tokens):,}"
        differing = [i for i, (a, b) in enumerate(zip(self.tokens, other.tokens)) if a != b]
        if differing:
            first = differing[0]
            return (
                f"{len(differing):,} of its {len(self.tokens):,} tokens are other texts "
                f"(token {first} is {_show(other.tokens[first])} there, {_show(self.tokens[first])} in the reference)"
            )
        if self.special != other.special:
            return f"other special tokens ({_specials(other.special)}; the reference: {_specials(self.special)})"
        return ""


def refuse_unless_same(reference: Vocabulary, candidate: Vocabulary, reference_path: str, candidate_path: str) -> None:
    why = reference.difference(candidate)
    if why:
        raise TokenizerMismatch(
            f"{candidate_path} has a different tokenizer from the reference {reference_path}: {why}. "
            "Token-by-token comparison would be meaningless; compare quantizations of the same model."
        )


def _show(text: bytes) -> str:
    return repr(text.decode("utf-8", errors="replace"))


def _specials(special: tuple[tuple[str, int], ...]) -> str:
    return ", ".join(f"{name} {token}" for name, token in special) or "none"
