"""The real voice and the real recognizer: text -> Piper -> WAV -> Whisper -> text, and speaking while text streams.

The round trip is scored by word error rate over a set of sentences (a bound, not an exact string:
another CPU may hear one word differently); the streaming test asserts the order of events.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from engine.voice.audio import AudioError, read_wav, wav_bytes
from engine.voice.tts import PcmChunk, speak
from engine.voice.wer import word_error_rate

SENTENCES = ("The weather is nice today.", "Please turn off the kitchen lights before you leave.",
             "She bought three apples and a loaf of bread.", "The meeting starts at nine in the morning.")
SET_BOUND = 0.25


def spoken_wav(text_to_speech, text: str, speed: float = 1.0) -> bytes:  # type: ignore[no-untyped-def]
    pcm = b"".join(chunk.pcm for chunk in speak(text_to_speech, [text], speed))
    return wav_bytes(pcm, text_to_speech.sample_rate)


def test_said_by_piper_and_heard_by_whisper_within_the_bound(text_to_speech, speech_to_text) -> None:  # type: ignore[no-untyped-def]
    heard = []
    for sentence in SENTENCES:
        audio = read_wav(spoken_wav(text_to_speech, sentence))
        assert audio.sample_rate == 22050  # the voice's own rate: the recognizer resamples it to 16 kHz
        transcript = speech_to_text.transcribe(audio, language="en")
        assert transcript.language == "en" and transcript.segments
        # Whisper's own timestamps may run past a short clip's end; the recognizer clamps them to the audio
        assert transcript.duration_s == round(audio.seconds, 3)
        assert 0 <= transcript.segments[0].start_s < transcript.segments[-1].end_s <= transcript.duration_s
        heard.append((sentence, transcript.text))
    assert word_error_rate(heard) <= SET_BOUND, heard


def test_the_language_is_detected_and_words_are_timed(text_to_speech, speech_to_text) -> None:  # type: ignore[no-untyped-def]
    audio = read_wav(spoken_wav(text_to_speech, SENTENCES[1]))
    transcript = speech_to_text.transcribe(audio, words=True)
    assert transcript.language == "en"
    words = [word for segment in transcript.segments for word in segment.words]
    assert len(words) >= 6
    assert all(a.start_s <= b.start_s for a, b in itertools.pairwise(words))


def test_an_unknown_language_code_is_refused(text_to_speech, speech_to_text) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(AudioError, match="'xx' is not a language"):
        speech_to_text.transcribe(read_wav(spoken_wav(text_to_speech, "Hello.")), language="xx")


def test_faster_speech_is_shorter(text_to_speech) -> None:  # type: ignore[no-untyped-def]
    def length(speed: float) -> int:
        return sum(len(chunk.pcm) for chunk in speak(text_to_speech, [" ".join(SENTENCES)], speed))

    # Piper draws its durations with noise (about 3 % over these four sentences) and its shortest phonemes do
    # not shrink, so twice the speed is ~0.6 of the length, not 0.5; the same speed gives 0.94 to 1.06
    assert 0.45 < length(2.0) / length(1.0) < 0.8


def test_the_first_sentence_is_spoken_before_the_last_is_written(text_to_speech) -> None:  # type: ignore[no-untyped-def]
    events: list[str] = []

    def streamed() -> Iterator[str]:
        for index, sentence in enumerate(SENTENCES):
            for word in sentence.split(" "):
                events.append(f"text {index}")
                yield word + " "

    for chunk in speak(text_to_speech, streamed()):
        assert isinstance(chunk, PcmChunk) and len(chunk.pcm) > 0.5 * chunk.sample_rate * 2  # > half a second
        events.append(f"audio {chunk.text}")
    first_audio = events.index(f"audio {SENTENCES[0]}")
    assert events[first_audio - 1] == "text 0" and "text 1" not in events[:first_audio]  # spoken once complete
    assert [event[6:] for event in events if event.startswith("audio")] == list(SENTENCES)
