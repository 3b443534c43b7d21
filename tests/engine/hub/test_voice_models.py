"""Voice models from the stand-in Hub: a faster-whisper repo and a Piper voices repo made of the real test models,
listed with their sizes and the RAM each needs, downloaded verified into the cache, and used from there: the
downloaded voice speaks a sentence and the downloaded Whisper model writes it down again."""

from __future__ import annotations

import numpy as np

from engine.hub.settings import HubSettings
from engine.hub.voice_models import fetch_voice, is_downloaded, list_voice_models, local_path
from engine.voice.audio import Audio
from engine.voice.loaded import SPEECH_MODEL_FACTOR, VOICE_FACTOR
from engine.voice.wer import word_error_rate
from tests.engine.hub.stand_in_hub import StandInHub
from tests.engine.hub.voice_fixtures import JOE, PIPER_REPO, WHISPER_REPO

# Heard whole 30 times of 30 (Piper's noise differs each call); "reads this sentence aloud" came back as "reads
# the sentence" 28 times of 30, a word from the limit, and once "download voice" took it over
SAID = "The downloaded voice reads one more sentence for the test."


def test_the_voice_models_are_listed_with_their_sizes(voice_hub: StandInHub) -> None:
    settings = HubSettings.from_env()
    _, whisper = list_voice_models(WHISPER_REPO, settings)
    served = voice_hub.repos[WHISPER_REPO].files
    assert [(c.kind, c.key, c.name) for c in whisper] == [("speech to text", "", "faster-whisper-base")]
    assert {f.path for f in whisper[0].files} == {"model.bin", "config.json", "tokenizer.json", "vocabulary.txt"}
    assert whisper[0].download_bytes == sum(file.size for name, file in served.items() if name != "README.md")
    assert whisper[0].memory_bytes == round(served["model.bin"].size * SPEECH_MODEL_FACTOR)
    _, voices = list_voice_models(PIPER_REPO, settings)
    joe = voice_hub.repos[PIPER_REPO].files
    assert [(c.kind, c.key, c.name, c.language) for c in voices] == [("voice", JOE, "en_US-joe-medium", "en_US")]
    assert voices[0].download_bytes == joe[JOE].size + joe[JOE + ".json"].size
    assert voices[0].memory_bytes == round(joe[JOE].size * VOICE_FACTOR)
    assert voices[0].line() == "en_US-joe-medium · voice · 60 MiB to download · about 121 MiB of RAM"


def test_downloaded_voice_models_speak_and_hear(voice_hub: StandInHub) -> None:
    from engine.voice.piper_voice import PiperSpeech
    from engine.voice.whisper import FasterWhisper

    settings = HubSettings.from_env()
    (whisper_listing, (whisper,)), (piper_listing, (joe,)) = (list_voice_models(repo, settings)
                                                              for repo in (WHISPER_REPO, PIPER_REPO))
    assert not is_downloaded(piper_listing, joe, settings)
    voice_path = fetch_voice(piper_listing, joe, settings)
    folder = fetch_voice(whisper_listing, whisper, settings)
    assert voice_path == local_path(piper_listing, joe, settings) and voice_path.endswith(JOE)
    assert is_downloaded(piper_listing, joe, settings) and is_downloaded(whisper_listing, whisper, settings)
    assert voice_hub.bytes_served(PIPER_REPO) == joe.download_bytes  # the half voice and the rest stayed there
    voice = PiperSpeech(voice_path, threads=2)
    speech = np.frombuffer(voice.synthesize(SAID), "<i2").astype(np.float32) / 32768.0
    heard = FasterWhisper(folder, threads=2).transcribe(Audio(speech, voice.sample_rate), "en").text
    assert word_error_rate([(SAID, heard)]) <= 0.25, heard
    again = fetch_voice(piper_listing, joe, settings)  # all there: nothing is fetched again
    assert again == voice_path and voice_hub.bytes_served(PIPER_REPO) == joe.download_bytes
