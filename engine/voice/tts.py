"""Text to speech: the interface a voice has, and speaking text that is still being written, sentence by sentence.

An answer streams in token by token; waiting for its end before speaking would make a person wait as
long as the whole answer takes. `speak` reads the text as it comes, cuts it into sentences, and hands
each sentence to the voice the moment its end is seen, so the first audio is ready while the model
is still writing the second sentence. Audio leaves as 16-bit mono PCM chunks, one per sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

MIN_SPEED, MAX_SPEED = 0.25, 4.0  # OpenAI's range for its speech endpoint
LONG_SENTENCE = 240  # characters: past this a clause end (, ; :) is end enough, so a long sentence starts sooner
_END = re.compile(r"[.!?…。！？]+[\"')\]]*(?=\s)|\n+")
_CLAUSE = re.compile(r"[,;:](?=\s)")
_ABBREVIATIONS = ("e.g.", "i.e.", "mr.", "mrs.", "ms.", "dr.", "vs.", "etc.", "st.", "no.", "fig.")
_MARKUP = re.compile(r"`{3}.*?`{3}|[*_#>`~]+|\[([^\]]*)\]\([^)]*\)", re.DOTALL)


@dataclass(frozen=True)
class PcmChunk:
    pcm: bytes  # 16-bit little-endian mono samples
    sample_rate: int
    text: str  # the sentence it says

    @property
    def seconds(self) -> float:
        return len(self.pcm) / 2 / self.sample_rate


class TextToSpeech(Protocol):
    name: str
    sample_rate: int

    def synthesize(self, sentence: str, speed: float = 1.0) -> bytes:
        """One sentence as 16-bit mono PCM at `sample_rate`; speed 2.0 says it in half the time."""
        ...


class SpeedError(ValueError):
    """A speaking speed out of range."""


def check_speed(speed: float) -> float:
    if not MIN_SPEED <= speed <= MAX_SPEED:
        raise SpeedError(f"The speed {speed} is out of range: from {MIN_SPEED} to {MAX_SPEED} (1.0 is normal).")
    return speed


class SentenceSplitter:
    """Text in pieces of any size (tokens) in, whole sentences out as soon as their end is seen."""

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, piece: str) -> list[str]:
        self._pending += piece
        sentences = []
        while (cut := self._cut()) is not None:
            sentence, self._pending = self._pending[:cut], self._pending[cut:]
            if sentence.strip():
                sentences.append(sentence.strip())
        return sentences

    def flush(self) -> list[str]:
        rest, self._pending = self._pending.strip(), ""
        return [rest] if rest else []

    def _cut(self) -> int | None:
        for found in _END.finditer(self._pending):
            before = self._pending[: found.start() + 1].split()[-1:] or [""]
            if found.group().startswith("\n") or before[0].lower() not in _ABBREVIATIONS:
                return found.end()
        if len(self._pending) > LONG_SENTENCE:
            clauses = list(_CLAUSE.finditer(self._pending))
            return clauses[-1].end() if clauses else None
        return None


def speakable(text: str) -> str:
    """What a voice should say of Markdown: no code blocks, no emphasis marks, a link's words not its address."""
    return re.sub(r"[ \t]+", " ", _MARKUP.sub(lambda found: found.group(1) or " ", text)).strip()


def sentences_of(pieces: Iterable[str]) -> Iterator[str]:
    """Each sentence of the streamed text, yielded as soon as it is complete."""
    splitter = SentenceSplitter()
    for piece in pieces:
        yield from splitter.feed(piece)
    yield from splitter.flush()


def speak(voice: TextToSpeech, pieces: Iterable[str], speed: float = 1.0) -> Iterator[PcmChunk]:
    """The text of `pieces` spoken: one chunk per sentence, each made as soon as its sentence is complete."""
    check_speed(speed)
    for sentence in sentences_of(pieces):
        said = speakable(sentence)
        if any(character.isalnum() for character in said):
            yield PcmChunk(voice.synthesize(said, speed), voice.sample_rate, said)
