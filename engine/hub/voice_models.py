"""Voice models from the Hub: faster-whisper folders (speech to text) and Piper voices (text to speech), with sizes.

A faster-whisper repo (Systran publishes one per Whisper size) is one model: its top-level folder
(model.bin, config.json, tokenizer.json, vocabulary.*). A Piper repo (rhasspy/piper-voices holds
every voice) is many: each .onnx with its .onnx.json beside it, in a folder per language, speaker and
quality. The sizes come from the same metadata as the chat models' (one request per repo), the RAM
each needs from the factors measured on loaded ones (engine/voice/loaded.py), and the download is the
chat models' verified one, into the same cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from engine.hub.cache_layout import CacheLayout
from engine.hub.download import Cancelled, download
from engine.hub.listing import HubFile, RepoListing, list_repo
from engine.hub.progress import Progress
from engine.hub.settings import HubSettings
from engine.units import format_bytes
from engine.voice.loaded import SPEECH_MODEL_FACTOR, VOICE_FACTOR

# what Get models offers without a search: Whisper from small to large enough for dictation, and every Piper voice
SUGGESTED_REPOS = ("Systran/faster-whisper-tiny", "Systran/faster-whisper-base", "Systran/faster-whisper-small",
                   "rhasspy/piper-voices")
WHISPER_NEEDS = ("model.bin", "config.json", "tokenizer.json")
WHISPER_EXTRAS = ("vocabulary.txt", "vocabulary.json", "preprocessor_config.json")
Kind = Literal["speech to text", "voice"]


@dataclass(frozen=True)
class VoiceChoice:
    kind: Kind
    key: str  # the .onnx for a voice; "" for a faster-whisper folder (the repo's top)
    name: str  # the voice's file name without .onnx; the repo's name for a speech model
    files: tuple[HubFile, ...]  # what is downloaded

    @property
    def download_bytes(self) -> int:
        return sum(file.size for file in self.files)

    @property
    def memory_bytes(self) -> int:
        """RAM once loaded and used: the weights' file times the factor measured on a loaded one."""
        weights = next(file for file in self.files if file.path.endswith((".onnx", "model.bin")))
        return round(weights.size * (VOICE_FACTOR if self.kind == "voice" else SPEECH_MODEL_FACTOR))

    @property
    def language(self) -> str:
        """A voice's language and region (en_US), from Piper's file name; "" for a speech model (many languages)."""
        return self.name.split("-", 1)[0] if self.kind == "voice" else ""

    def line(self) -> str:
        """ "en_US-joe-medium · voice · 60 MiB to download · about 121 MiB of RAM" """
        return (f"{self.name} · {self.kind} · {format_bytes(self.download_bytes)} to download · about "
                f"{format_bytes(self.memory_bytes)} of RAM")


def voice_choices(repo_id: str, files: tuple[HubFile, ...]) -> list[VoiceChoice]:
    """The repo's speech model (a faster-whisper folder at its top) and its voices (each .onnx with its .onnx.json)."""
    by_path = {file.path: file for file in files}
    choices = []
    if all(name in by_path for name in WHISPER_NEEDS):
        folder = tuple(by_path[name] for name in WHISPER_NEEDS + WHISPER_EXTRAS if name in by_path)
        choices.append(VoiceChoice("speech to text", "", repo_id.rsplit("/", 1)[-1], folder))
    for file in files:
        config = by_path.get(file.path + ".json")
        if file.path.endswith(".onnx") and config is not None:
            choices.append(VoiceChoice("voice", file.path, PurePosixPath(file.path).name[: -len(".onnx")],
                                       (file, config)))
    return sorted(choices, key=lambda choice: (choice.kind != "speech to text", choice.name))


def list_voice_models(repo_id: str, settings: HubSettings,
                      revision: str | None = None) -> tuple[RepoListing, list[VoiceChoice]]:
    listing = list_repo(repo_id, settings, revision)
    return listing, voice_choices(listing.repo_id, listing.files)


def local_path(listing: RepoListing, choice: VoiceChoice, settings: HubSettings) -> str:
    """Where the choice is (or will be) in the cache: the folder Settings > Voice takes, or the voice's .onnx."""
    layout = CacheLayout(settings.cache, listing.repo_id)
    return str(layout.in_snapshot(listing.commit, choice.key) if choice.key else layout.snapshot(listing.commit))


def is_downloaded(listing: RepoListing, choice: VoiceChoice, settings: HubSettings) -> bool:
    layout = CacheLayout(settings.cache, listing.repo_id)
    return all(layout.is_linked(listing.commit, file) for file in choice.files)


def fetch_voice(listing: RepoListing, choice: VoiceChoice, settings: HubSettings,
                on_progress: Progress | None = None, cancelled: Cancelled = lambda: False) -> str:
    """Download what `choice` needs, verified; the path Settings > Voice takes for it."""
    download(listing.repo_id, listing.revision, listing.commit, choice.files, settings, on_progress, cancelled)
    return local_path(listing, choice, settings)
