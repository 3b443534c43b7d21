"""The stand-in Hub serving voice models made of the real test models: a faster-whisper repo (Whisper base) and a
Piper voices repo (en_US joe, and a voice without its .onnx.json, which is no voice)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.engine.hub.stand_in_hub import StandInHub

WHISPER_REPO, PIPER_REPO = "hearth-test/faster-whisper-base", "hearth-test/piper-voices"
JOE = "en/en_US/joe/medium/en_US-joe-medium.onnx"
HALF = "de/de_DE/thorsten/low/de_DE-thorsten-low.onnx"  # its .onnx.json is missing: not a voice Piper can load


@pytest.fixture()
def voice_hub(hub_env: Path, speech_model: str, voice_model: str,
              monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInHub]:
    server = StandInHub()
    folder = Path(speech_model)
    whisper = {p.name: p for p in sorted(folder.iterdir()) if p.is_file()}
    server.add_repo(WHISPER_REPO, {**whisper, "README.md": b"# Whisper base, CTranslate2\n"},
                    ["ctranslate2", "audio", "automatic-speech-recognition"],
                    pipeline_tag="automatic-speech-recognition", library_name="ctranslate2")
    joe = Path(voice_model)
    server.add_repo(PIPER_REPO, {JOE: joe, JOE + ".json": Path(f"{joe}.json"), HALF: b"not all of a voice",
                                 "voices.json": b"{}", "README.md": b"# Piper voices\n"},
                    ["onnx", "text-to-speech"], pipeline_tag="text-to-speech")
    monkeypatch.setenv("HF_ENDPOINT", server.start())
    yield server
    server.stop()
