"""faster-whisper (CTranslate2) as the speech recognizer: a model folder in, timed segments out, on the CPU.

The folder is faster-whisper's format (model.bin, config.json, tokenizer.json, vocabulary.*), the one
Systran publishes for every Whisper size. int8 weights: on a CPU without a GPU it is the fast type and
loses no accuracy worth naming. One transcription at a time per model (a lock): CTranslate2 would
queue them anyway, and the threads are the CPU's to share with the chat models.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from engine.thread_cap import capped
from engine.voice.audio import Audio, AudioError, resampled
from engine.voice.loaded import remember, speech_model_bytes
from engine.voice.stt import SPEECH_RATE, Segment, Transcript, Word

REQUIRED_FILES = ("model.bin", "config.json")
COMPUTE_TYPE = "int8"


class SpeechModelError(RuntimeError):
    """The speech model cannot be used; the message says what to fix."""


def check_model_folder(folder: str | Path) -> Path:
    path = Path(folder)
    if not path.is_dir():
        raise SpeechModelError(f"The speech-to-text model {path} is not a folder: give the folder of a "
                               "faster-whisper model (model.bin, config.json, tokenizer.json).")
    missing = [name for name in REQUIRED_FILES if not (path / name).is_file()]
    if missing:
        raise SpeechModelError(f"The folder {path} is not a faster-whisper model: {', '.join(missing)} missing.")
    return path


class FasterWhisper:
    """A Whisper model in faster-whisper's format; `threads` CPU threads (HEARTH_THREADS caps them)."""

    def __init__(self, folder: str | Path, threads: int = 2) -> None:
        path = check_model_folder(folder)
        try:
            from faster_whisper import WhisperModel
        except ImportError:
            raise SpeechModelError("Speech to text needs faster-whisper: pip install 'hearth-chat[voice]'.") from None
        self.name = path.name
        self.path = path
        try:
            self._model = WhisperModel(str(path), device="cpu", compute_type=COMPUTE_TYPE, cpu_threads=capped(threads))
        except (RuntimeError, ValueError, OSError) as error:
            raise SpeechModelError(f"The speech model in {path} could not be loaded: {error}") from None
        self._lock = threading.Lock()
        self.kind, self.memory_bytes = "speech to text", speech_model_bytes(path)  # for the memory gauge
        remember(self)

    def transcribe(self, audio: Audio, language: str | None = None, words: bool = False) -> Transcript:
        samples = resampled(audio, SPEECH_RATE).samples
        if language is not None and language not in self.languages:
            raise AudioError(f"{language!r} is not a language this model knows; use an ISO 639-1 code such "
                             "as en, de, fr, or leave it out to have it detected.")
        with self._lock:
            # beam 1 (greedy): on two cores the beam of five costs three times the time for a few words
            found, info = self._model.transcribe(samples, language=language, beam_size=1, word_timestamps=words,
                                                 condition_on_previous_text=False)
            seconds = round(audio.seconds, 3)
            segments = tuple(_segment(segment, seconds) for segment in found)  # decoding happens while read
        return Transcript(info.language, seconds, segments)

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self._model.supported_languages)


def _segment(found: Any, seconds: float) -> Segment:
    # Whisper predicts its timestamps as tokens over a 30-second window, and on a short clip the last one can
    # land past the end (4.0 s on a 2.7 s clip was seen): no word is said after the audio ends, so clamp
    def at(time: float) -> float:
        return min(round(time, 2), seconds)

    words = tuple(Word(at(word.start), at(word.end), word.word.strip()) for word in found.words or ())
    return Segment(at(found.start), at(found.end), found.text.strip(), words)
