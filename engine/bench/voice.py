"""`python -m engine.bench --voice`: speech to text and text to speech on this CPU, and the round trip's accuracy.

Each fixed sentence is streamed word by word into the voice as an answer would be; the time from the
word that completes it to its audio is `first_audio_ms` (the wait before a spoken answer starts). The
audio is then recognized, and what was heard is scored against what was said (word error rate). The
realtime factors are compute seconds over audio seconds (below 1: faster than real time). Goals
(issue 43, a 2-core CPU with Whisper base): recognition <= 0.5, first audio <= 800 ms, WER <= 10 %.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterator
from typing import Any

from engine.bench.harness import BenchError

# The first Harvard sentences (IEEE 1969 recommended practice for speech quality measurements)
SENTENCES = (
    "The birch canoe slid on the smooth planks.", "Glue the sheet to the dark blue background.",
    "It's easy to tell the depth of a well.", "These days a chicken leg is a rare dish.",
    "Rice is often served in round bowls.", "The juice of lemons makes fine punch.",
    "The box was thrown beside the parked truck.", "The hogs were fed chopped corn and garbage.",
    "Four hours of steady work faced us.", "A large size in stockings is hard to sell.",
    "The boy was there when the sun rose.", "A rod is used to catch pink salmon.",
    "The source of the huge river is the clear spring.", "Kick the ball straight and follow through.",
    "Help the woman get back to her feet.", "A pot of tea helps to pass the evening.",
    "Smoky fires lack flame and heat.", "The soft cushion broke the man's fall.",
    "The salt breeze came across from the sea.", "The girl at the booth sold fifty bonds.",
)
GOAL_STT_FACTOR, GOAL_FIRST_AUDIO_MS, GOAL_WER = 0.5, 800.0, 0.10


def measure_voice(stt_model: str, tts_voice: str, sentences: int = len(SENTENCES), threads: int = 2) -> dict[str, Any]:
    from engine.voice.audio import read_wav, wav_bytes
    from engine.voice.piper_voice import PiperSpeech, VoiceError
    from engine.voice.wer import word_error_rate, words_of
    from engine.voice.whisper import FasterWhisper, SpeechModelError

    try:
        voice, recognizer = PiperSpeech(tts_voice, threads), FasterWhisper(stt_model, threads)
    except (VoiceError, SpeechModelError) as error:
        raise BenchError(str(error)) from error
    recognizer.transcribe(read_wav(wav_bytes(voice.synthesize("Warming up."), voice.sample_rate)))  # not counted
    latencies, spoken_s, synth_s, heard_s, heard_cpu_s, pairs = [], 0.0, 0.0, 0.0, 0.0, []
    for index, sentence in enumerate(SENTENCES[:sentences]):
        following = SENTENCES[(index + 1) % len(SENTENCES)]
        pcm, latency_s = _first_sentence(voice, f"{sentence} {following}")
        latencies.append(latency_s * 1000)
        audio = read_wav(wav_bytes(pcm, voice.sample_rate))
        spoken_s, synth_s = spoken_s + audio.seconds, synth_s + latency_s  # the wait is the sentence's synthesis
        started, started_cpu = time.perf_counter(), time.process_time()
        heard = recognizer.transcribe(audio, language="en")
        heard_s, heard_cpu_s = heard_s + time.perf_counter() - started, heard_cpu_s + time.process_time() - started_cpu
        pairs.append((sentence, heard.text))
    return {"voice": {
        "stt_model": recognizer.name, "tts_voice": voice.name, "sentences": len(pairs), "threads": threads,
        "audio_s": round(spoken_s, 2),
        "stt_realtime_factor": round(heard_s / spoken_s, 3), "tts_realtime_factor": round(synth_s / spoken_s, 3),
        # CPU seconds (all threads) per audio second: what the work costs, whatever else the machine runs
        "stt_cpu_factor": round(heard_cpu_s / spoken_s, 3),
        "load_average": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "first_audio_ms": round(statistics.median(latencies), 1), "first_audio_ms_max": round(max(latencies), 1),
        "round_trip_wer": round(word_error_rate(pairs), 4),
        "misheard": [{"said": said, "heard": heard} for said, heard in pairs if words_of(said) != words_of(heard)][:5]}}


def _first_sentence(voice: Any, text: str) -> tuple[bytes, float]:
    """(the first sentence's audio, seconds from the word that ended it to its audio), the text fed word by
    word as a model's answer streams; the rest is never made."""
    from engine.voice.tts import speak

    fed_at = [0.0]

    def streamed() -> Iterator[str]:
        for word in text.split(" "):
            fed_at[0] = time.perf_counter()
            yield word + " "

    for chunk in speak(voice, streamed()):
        return chunk.pcm, time.perf_counter() - fed_at[0]
    raise BenchError(f"the voice made no audio for {text!r}")


def voice_table(result: dict[str, Any]) -> str:
    figures = result["voice"]

    def verdict(met: bool) -> str:
        return "met" if met else "NOT met"

    stt_met = verdict(figures["stt_realtime_factor"] <= GOAL_STT_FACTOR)
    first_met = verdict(figures["first_audio_ms"] <= GOAL_FIRST_AUDIO_MS)
    wer_met = verdict(figures["round_trip_wer"] <= GOAL_WER)
    return "\n".join([
        (f"voice: {figures['stt_model']} hears, {figures['tts_voice']} speaks; {figures['sentences']} sentences, "
         f"{figures['audio_s']} s of speech, {figures['threads']} threads each"),
        (f"speech to text: {figures['stt_realtime_factor']} x real time (goal <= {GOAL_STT_FACTOR}: {stt_met}); "
         f"{figures['stt_cpu_factor']} CPU s per audio s; load average {figures['load_average']}"),
        (f"text to speech: {figures['tts_realtime_factor']} x real time; first audio {figures['first_audio_ms']} ms "
         f"after its sentence ends (median; max {figures['first_audio_ms_max']} ms; goal <= {GOAL_FIRST_AUDIO_MS:g}: "
         f"{first_met})"),
        f"round trip word error rate: {figures['round_trip_wer']:.1%} (goal <= {GOAL_WER:.0%}: {wer_met})",
    ])
