"""The voice models loaded in this process and the RAM each holds (estimated), for the window's memory gauge.

The window's dictation and read-aloud and the local API each load their own speech model and voice;
every one registers itself here when it loads and leaves when it is dropped (a weak set), so the
gauge counts whatever is really loaded, whoever loaded it.

The estimates are the file's size times a factor measured on this project's fixtures (Whisper base,
faster-whisper's float16 model.bin run as int8; Piper's joe medium voice), the process's resident
memory after a load and a first use, less before: a 139 MiB model.bin grew it by 195 MiB after a
10 s clip (the weights as int8 beside the file's pages, the encoder's buffers for a 30 s window); a
60 MiB voice by 121 MiB after one sentence (ONNX Runtime's arena).
"""

from __future__ import annotations

import threading
import weakref
from pathlib import Path
from typing import Protocol

SPEECH_MODEL_FACTOR = 1.4
VOICE_FACTOR = 2.0


class VoiceModel(Protocol):
    name: str
    kind: str  # "speech to text" or "voice"
    memory_bytes: int


_loaded: weakref.WeakSet[VoiceModel] = weakref.WeakSet()
_lock = threading.Lock()  # loaded on worker threads, listed on the GUI thread


def remember(model: VoiceModel) -> None:
    with _lock:
        _loaded.add(model)


def loaded_voice_models() -> list[VoiceModel]:
    """The speech models first, then the voices; each by name."""
    with _lock:
        models = list(_loaded)
    return sorted(models, key=lambda model: (model.kind != "speech to text", model.name))


def speech_model_bytes(folder: str | Path) -> int:
    """What a faster-whisper folder holds in RAM loaded and used (its model.bin's size times the factor)."""
    return _scaled(Path(folder) / "model.bin", SPEECH_MODEL_FACTOR)


def voice_bytes(onnx: str | Path) -> int:
    """What a Piper voice holds in RAM loaded and speaking (its .onnx's size times the factor)."""
    return _scaled(Path(onnx), VOICE_FACTOR)


def _scaled(path: Path, factor: float) -> int:
    try:
        return round(path.stat().st_size * factor)
    except OSError:
        return 0
