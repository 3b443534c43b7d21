"""Speech to text: what a recognizer gives back (a transcript of timed segments) and the interface it has.

A recognizer takes checked audio (engine/voice/audio.py) at any rate and resamples it itself; the
language is given (an ISO 639-1 code) or detected. Implementations: faster-whisper (whisper.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from engine.voice.audio import (
    DEFAULT_MAX_SECONDS,
    Audio,
    AudioError,
    check_length,
    check_rate,
    is_wav,
    read_wav,
)

SPEECH_RATE = 16000  # what Whisper reads


@dataclass(frozen=True)
class Word:
    start_s: float
    end_s: float
    text: str


@dataclass(frozen=True)
class Segment:
    start_s: float
    end_s: float
    text: str  # as the model wrote it, leading space trimmed
    words: tuple[Word, ...] = ()


@dataclass(frozen=True)
class Transcript:
    language: str  # the language given, or the one detected
    duration_s: float
    segments: tuple[Segment, ...]

    @property
    def text(self) -> str:
        return " ".join(segment.text for segment in self.segments if segment.text).strip()


class SpeechToText(Protocol):
    name: str  # what the API and the bench call the model

    def transcribe(self, audio: Audio, language: str | None = None, words: bool = False) -> Transcript:
        """The words in `audio`; `language` None: detected. `words`: each segment's word timings too."""
        ...


def decode_audio(data: bytes, max_seconds: float = DEFAULT_MAX_SECONDS) -> Audio:
    """WAV read here; any other container (MP3, FLAC, OGG, M4A, WebM) through PyAV, which faster-whisper
    brings; AudioError with a sentence for anything that is not audio."""
    if not data:
        raise AudioError("The audio is empty: no bytes were sent.")
    if is_wav(data):
        return read_wav(data, max_seconds)
    try:
        import av
    except ImportError:
        raise AudioError("This is not a WAV file, and other formats need PyAV (pip install av).") from None
    return _decoded(av, data, max_seconds)


def _decoded(av: object, data: bytes, max_seconds: float) -> Audio:
    import io

    import numpy as np

    av_error = getattr(av, "FFmpegError", Exception)
    try:
        with av.open(io.BytesIO(data), mode="r", metadata_errors="ignore") as container:  # type: ignore[attr-defined]
            if not container.streams.audio:
                raise AudioError("The file has no audio in it: send a WAV, MP3, FLAC, OGG or M4A recording.")
            stream = container.streams.audio[0]
            if container.duration is not None:
                check_length(container.duration / 1_000_000, max_seconds)
            check_rate(stream.rate or SPEECH_RATE)
            resampler = av.AudioResampler(format="flt", layout="mono", rate=SPEECH_RATE)  # type: ignore[attr-defined]
            parts = [frame.to_ndarray().reshape(-1) for packet in container.decode(stream)
                     for frame in resampler.resample(packet)]
    except av_error as error:  # type: ignore[misc]
        raise AudioError(f"This is not audio that can be read (a WAV, MP3, FLAC, OGG or M4A file): {error}.") from None
    samples = np.concatenate(parts).astype(np.float32) if parts else np.zeros(0, np.float32)
    if not len(samples):
        raise AudioError("The file holds no sound: the recording is empty.")
    check_length(len(samples) / SPEECH_RATE, max_seconds)
    return Audio(samples, SPEECH_RATE)
