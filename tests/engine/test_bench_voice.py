"""`python -m engine.bench --voice` end to end on two sentences with the tests' voice models: keys and sane numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import bench
from engine.bench.cli import parse


def test_the_voice_mode_measures_both_ways_and_the_round_trip(speech_model: str, voice_model: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "voice.json"
    argv = ["--voice", "--sentences", "2", "--stt-model", speech_model, "--tts-voice", voice_model,
            "--json", str(out)]
    assert bench.main(argv) == 0
    figures = json.loads(out.read_text())["voice"]
    assert figures["stt_model"] == Path(speech_model).name and figures["tts_voice"] == "en_US-joe-medium"
    assert figures["sentences"] == 2 and 3.0 < figures["audio_s"] < 10.0  # two short sentences of speech
    assert figures["stt_realtime_factor"] > 0 and figures["tts_realtime_factor"] > 0 and figures["stt_cpu_factor"] > 0
    assert 0 < figures["first_audio_ms"] <= figures["first_audio_ms_max"]
    assert 0.0 <= figures["round_trip_wer"] <= 0.5
    printed = capsys.readouterr().out
    assert "speech to text:" in printed and "round trip word error rate:" in printed


def test_voice_takes_one_to_twenty_sentences(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse(["--voice", "--sentences", "21", "--stt-model", "a", "--tts-voice", "b"])
    assert "--sentences takes 1 to 20" in capsys.readouterr().err
