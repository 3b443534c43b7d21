"""The speech model dictation transcribes with: loaded once per folder, on the worker that first needs it.

The window's dictation and the local API (engine/server/voice_desk.py) each load their own; a
model is loaded the first time a recording is transcribed, so a window that never dictates never
pays for it.
"""

from __future__ import annotations

import threading

from engine.paths import user_path
from engine.protocol import Dictation
from engine.voice.audio import Audio
from engine.voice.stt import SpeechToText

_recognizers: dict[str, SpeechToText] = {}
_lock = threading.Lock()


def loaded_recognizer(folder: str) -> SpeechToText:
    """The faster-whisper model in `folder` (SpeechModelError says what is wrong with it)."""
    from engine.voice.whisper import FasterWhisper

    path = user_path(folder)
    with _lock:
        if path not in _recognizers:
            _recognizers[path] = FasterWhisper(path, threads=2)
        return _recognizers[path]


def dictation_of(audio: Audio, folder: str, language: str | None = None) -> Dictation | str:
    """What the model in `folder` hears in `audio` (in `language`; None: detected), or the sentence that says why
    it could not (worker thread)."""
    try:
        recognizer = loaded_recognizer(folder)
        transcript = recognizer.transcribe(audio, language)
    except Exception as error:  # noqa: BLE001 - said to the person; the window goes on
        return f"The recording could not be transcribed: {error}"
    return Dictation(transcript.text, transcript.language, recognizer.name, round(audio.seconds, 2))
