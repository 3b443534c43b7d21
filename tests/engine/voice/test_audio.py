"""Audio checks and conversions, the sentence splitter and the word error rate: no model, real bytes."""

from __future__ import annotations

import io
import struct
import wave

import numpy as np
import pytest

from engine.voice.audio import (
    Audio,
    AudioError,
    pcm16,
    read_wav,
    resampled,
    streaming_wav_header,
    wav_bytes,
)
from engine.voice.stt import decode_audio
from engine.voice.tts import (
    SentenceSplitter,
    SpeedError,
    check_speed,
    sentences_of,
    speakable,
)
from engine.voice.wer import edit_distance, word_error_rate, words_of


def tone(frequency: float, rate: int, seconds: float = 0.5) -> np.ndarray:
    return (0.5 * np.sin(2 * np.pi * frequency * np.arange(int(rate * seconds)) / rate)).astype(np.float32)


def peak_hz(audio: Audio) -> float:
    spectrum = np.abs(np.fft.rfft(audio.samples))
    return float(np.fft.rfftfreq(len(audio.samples), 1 / audio.sample_rate)[spectrum.argmax()])


def wav_of(samples: np.ndarray, rate: int, width: int = 2, channels: int = 1) -> bytes:
    scaled = np.repeat(samples, channels)
    if width == 1:
        raw = (scaled * 127 + 128).astype(np.uint8).tobytes()
    elif width == 3:
        raw = b"".join(struct.pack("<i", int(value * 2**23))[:3] for value in scaled)
    else:
        raw = (scaled * 32767).astype("<i2").tobytes()
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(width)
        writer.setframerate(rate)
        writer.writeframes(raw)
    return buffer.getvalue()


def test_a_written_wav_reads_back_the_same_samples() -> None:
    samples = tone(440, 16000)
    audio = read_wav(wav_bytes(pcm16(samples), 16000))
    assert audio.sample_rate == 16000 and len(audio.samples) == len(samples)
    assert np.abs(audio.samples - samples).max() < 1e-4


@pytest.mark.parametrize("width", [1, 2, 3])
def test_8_16_and_24_bit_stereo_are_read_as_mono(width: int) -> None:
    audio = read_wav(wav_of(tone(440, 8000), 8000, width=width, channels=2))
    assert len(audio.samples) == 4000
    assert peak_hz(audio) == pytest.approx(440, abs=3)
    assert np.abs(audio.samples).max() == pytest.approx(0.5, abs=0.02)


def test_44100_hz_is_resampled_to_16000_keeping_its_pitch() -> None:
    audio = resampled(read_wav(wav_of(tone(1000, 44100), 44100)), 16000)
    assert audio.sample_rate == 16000 and len(audio.samples) == 8000
    assert peak_hz(audio) == pytest.approx(1000, abs=3)


def test_a_tone_above_the_new_nyquist_is_filtered_out_not_folded_down() -> None:
    folded = resampled(Audio(tone(12000, 44100), 44100), 16000)  # would alias to 4000 Hz unfiltered
    assert np.sqrt(np.mean(folded.samples[200:-200] ** 2)) < 0.05


@pytest.mark.parametrize(("data", "says"), [
    (b"", "empty"),
    (b"hello, this is a text file and not a recording at all", "not a WAV"),
    (b"RIFF\x10\x00\x00\x00WAVEjunkjunkjunk", "damaged"),
    (b"RIFF" + b"\x00" * 4 + b"WAVE" + b"fmt " + b"\xff" * 8, "damaged"),
])
def test_bad_wav_bytes_get_a_sentence(data: bytes, says: str) -> None:
    with pytest.raises(AudioError, match=says):
        read_wav(data)


def test_a_wav_with_no_samples_is_empty() -> None:
    with pytest.raises(AudioError, match="no samples"):
        read_wav(wav_bytes(b"", 16000))


def test_two_hours_is_refused_from_the_header_before_reading() -> None:
    header = wav_bytes(b"", 8000)
    two_hours = 2 * 3600 * 8000 * 2
    lying = header[:4] + struct.pack("<I", 36 + two_hours) + header[8:40] + struct.pack("<I", two_hours)
    with pytest.raises(AudioError, match="120 minutes long; at most 30 minutes"):
        read_wav(lying + b"\x00" * 1000)


def test_a_rate_no_recorder_makes_is_refused() -> None:
    with pytest.raises(AudioError, match="4000 Hz; rates from 8000"):
        read_wav(wav_of(tone(100, 4000), 4000))


def test_other_containers_go_through_pyav_and_garbage_is_not_audio() -> None:
    pytest.importorskip("av")
    with pytest.raises(AudioError, match="not audio that can be read"):
        decode_audio(b"\x00\x01 definitely not an mp3 " * 50)
    assert decode_audio(wav_of(tone(440, 16000), 16000)).sample_rate == 16000


def test_the_streaming_header_is_a_wav_header_with_unknown_sizes() -> None:
    header = streaming_wav_header(22050)
    assert len(header) == 44 and header[:4] == b"RIFF" and header[36:40] == b"data"
    assert struct.unpack("<I", header[24:28])[0] == 22050 and header[40:44] == b"\xff" * 4


def test_sentences_come_out_as_soon_as_their_end_is_seen() -> None:
    splitter = SentenceSplitter()
    assert splitter.feed("Hello there") == []
    assert splitter.feed(".") == []  # a full stop is an end once a space follows it (not 3.14)
    assert splitter.feed(" How are you? Fine") == ["Hello there.", "How are you?"]
    assert splitter.flush() == ["Fine"]


def test_abbreviations_and_numbers_do_not_end_a_sentence() -> None:
    text = "Pi is 3.14 or so, e.g. in school. Dr. Smith agrees.\n- a list item\n"
    assert list(sentences_of(text[i:i + 3] for i in range(0, len(text), 3))) == [
        "Pi is 3.14 or so, e.g. in school.", "Dr. Smith agrees.", "- a list item"]


def test_markdown_is_said_as_words() -> None:
    assert speakable("**Bold** and `code` with [a link](http://x.y/z).") == "Bold and code with a link."
    assert speakable("```python\nprint(1)\n```") == ""


def test_speed_out_of_range_is_refused() -> None:
    assert check_speed(1.5) == 1.5
    with pytest.raises(SpeedError, match="from 0.25 to 4.0"):
        check_speed(5)


def test_word_error_rate_counts_substitutions_drops_and_additions() -> None:
    assert words_of("Turn it OFF, please!") == ["turn", "it", "off", "please"]
    assert edit_distance(["a", "b", "c"], ["a", "x", "c", "d"]) == 2
    assert word_error_rate([("the cat sat", "the cat sat"), ("one two three four", "one too three")]) == 2 / 7
