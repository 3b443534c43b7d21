"""Piper (piper-tts: VITS voices in ONNX, eSpeak NG phonemes) as the voice, on the CPU.

A voice is an .onnx file with its .onnx.json beside it (rhasspy/piper-voices has one per language and
speaker). The ONNX session is made here rather than by PiperVoice.load, so the thread count is ours:
the chat models share the same cores.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from engine.thread_cap import capped
from engine.voice.audio import pcm16
from engine.voice.loaded import remember, voice_bytes
from engine.voice.tts import check_speed


class VoiceError(RuntimeError):
    """The voice cannot be used; the message says what to fix."""


def check_voice_file(path: str | Path) -> tuple[Path, Path]:
    """The voice's .onnx and its .onnx.json, or VoiceError."""
    model = Path(path)
    config = model.with_name(model.name + ".json")
    if model.suffix != ".onnx" or not model.is_file():
        raise VoiceError(f"The voice {model} is not a Piper voice file: give its .onnx file (with the .onnx.json "
                         "beside it), e.g. en_US-lessac-medium.onnx.")
    if not config.is_file():
        raise VoiceError(f"The voice {model.name} has no {config.name} beside it: Piper needs both files.")
    return model, config


class PiperSpeech:
    """A Piper voice; `threads` CPU threads for its ONNX session (HEARTH_THREADS caps them)."""

    def __init__(self, path: str | Path, threads: int = 2) -> None:
        model, config = check_voice_file(path)
        try:
            import onnxruntime
            from piper.config import PiperConfig, SynthesisConfig
            from piper.voice import PiperVoice
        except ImportError:
            raise VoiceError("Text to speech needs piper-tts: pip install 'hearth-chat[voice]'.") from None
        import json

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = capped(threads)
        options.inter_op_num_threads = 1
        try:
            session = onnxruntime.InferenceSession(str(model), sess_options=options,
                                                   providers=["CPUExecutionProvider"])
            settings = PiperConfig.from_dict(json.loads(config.read_text(encoding="utf-8")))
        except (RuntimeError, ValueError, KeyError, OSError) as error:
            raise VoiceError(f"The voice {model.name} could not be loaded: {error}") from None
        self._voice = PiperVoice(session=session, config=settings)
        self._synthesis_config = SynthesisConfig
        self.name = model.name[: -len(".onnx")]
        self.path = model
        self.sample_rate = settings.sample_rate
        self._lock = threading.Lock()
        self.kind, self.memory_bytes = "voice", voice_bytes(model)  # for the memory gauge
        remember(self)

    def synthesize(self, sentence: str, speed: float = 1.0) -> bytes:
        config = self._synthesis_config(length_scale=self._voice.config.length_scale / check_speed(speed))
        with self._lock:  # espeak-ng's phonemizer keeps global state: one sentence at a time
            parts = [chunk.audio_float_array for chunk in self._voice.synthesize(sentence, config)]
        return pcm16(np.concatenate(parts)) if parts else b""
