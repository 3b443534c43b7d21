"""The voice models in the gauge: the real Whisper model and Piper voice, loaded as dictation and read aloud load
them, each have a details row with their estimate, and together a part of the memory bar; one dropped leaves both."""

from __future__ import annotations

import gc
from pathlib import Path

from app.status.gauge import GaugeWidget
from app.status.models_rows import voice_models
from app.voice.read_aloud import loaded_voice
from app.voice.recognizer import loaded_recognizer
from engine.protocol import EngineStats
from engine.voice.loaded import SPEECH_MODEL_FACTOR, VOICE_FACTOR
from tests.app.scripted_bridge import model_info

MIB = 1 << 20


def test_the_speech_model_and_the_voice_have_their_rows_and_their_part_of_the_bar(  # type: ignore[no-untyped-def]
        qtbot, speech_model: str, voice_model: str) -> None:
    recognizer, voice = loaded_recognizer(speech_model), loaded_voice(voice_model)
    speech_bytes = round((Path(speech_model) / "model.bin").stat().st_size * SPEECH_MODEL_FACTOR)
    voice_bytes = round(Path(voice_model).stat().st_size * VOICE_FACTOR)
    assert (recognizer.memory_bytes, voice.memory_bytes) == (speech_bytes, voice_bytes)  # type: ignore[attr-defined]
    assert 150 * MIB < speech_bytes < 250 * MIB and 100 * MIB < voice_bytes < 150 * MIB  # Whisper base, a medium voice
    # Other tests in this process may still hold models of their own (the local API's, say): each is a row too
    gc.collect()
    rows = [(kind, name) for kind, name, _ in voice_models()]
    assert ("speech to text", Path(speech_model).name) in rows and ("voice", "en_US-joe-medium") in rows
    assert rows == sorted(rows, key=lambda row: (row[0] != "speech to text", row[1]))  # speech models first
    others = sum(size for *_, size in voice_models()) - speech_bytes - voice_bytes
    assert others >= 0
    gauge = GaugeWidget(lambda _chat_id: "")
    qtbot.addWidget(gauge)
    gauge.set_model(model_info())
    gauge.update_stats(EngineStats(0.0, (), 0, 4, MIB, MIB, 0))  # the rest: this process, both models in it
    details = gauge.details_html()
    assert (f"<b>Voice</b>&nbsp;&nbsp;</td><td>speech to text {Path(speech_model).name}: "
            f"{speech_bytes / MIB:.0f} MiB in RAM (estimated)") in details
    assert f"voice en_US-joe-medium: {voice_bytes / MIB:.0f} MiB in RAM (estimated)" in details
    parts = {part.name: part.size for part in gauge.memory_bar.parts}
    assert gauge.memory is not None and gauge.memory.process_bytes > 2 * MIB + speech_bytes + voice_bytes + others
    assert parts["voice models"] == speech_bytes + voice_bytes + others


def test_a_dropped_voice_model_leaves_the_gauge(speech_model: str) -> None:
    from engine.voice.whisper import FasterWhisper

    before = len(voice_models())
    another = FasterWhisper(speech_model, threads=1)  # the local API's own, say
    assert len(voice_models()) == before + 1 and another.memory_bytes > 0
    del another
    gc.collect()
    assert len(voice_models()) == before
