"""Hands-free listening's pause detection on made samples: a tone stands for speech, zeros and faint noise for quiet.
Everything is counted in samples, so each test knows the exact sample at which the message ends."""

from __future__ import annotations

import numpy as np

from app.voice.recording import Recording
from app.voice.voice_activity import PauseRule, VoiceActivity, loudness_db

RATE = 16000
WINDOW = RATE // 10  # WINDOW_SECONDS at 16 kHz


def tone(seconds: float, amplitude: float = 0.3) -> np.ndarray:
    count = int(RATE * seconds)
    return (amplitude * np.sin(np.arange(count) * 2 * np.pi * 220 / RATE)).astype(np.float32)


def quiet(seconds: float, amplitude: float = 0.0) -> np.ndarray:
    noise = np.random.default_rng(7).uniform(-1, 1, int(RATE * seconds))
    return (amplitude * noise).astype(np.float32)


def fed_in_blocks(activity: VoiceActivity, samples: np.ndarray, block: int = 800) -> int | None:
    """Feed 50 ms blocks as the microphone does; the block count at which `feed` first said the pause came."""
    for index, start in enumerate(range(0, len(samples), block)):
        if activity.feed(samples[start:start + block]):
            return index
    return None


def test_loudness_is_rms_in_dbfs() -> None:
    assert round(loudness_db(tone(1.0, 1.0)), 1) == -3.0  # a full-scale sine: RMS 0.707
    assert round(loudness_db(tone(1.0, 0.01)), 1) == -43.0
    assert loudness_db(np.zeros(0, np.float32)) == -120.0 and loudness_db(np.zeros(10, np.float32)) == -120.0


def test_speech_then_the_pause_ends_the_message_at_the_pause_s_last_window() -> None:
    activity = VoiceActivity(RATE, PauseRule(threshold_db=-40.0, pause_seconds=1.0))
    samples = np.concatenate([quiet(0.5), tone(1.0), quiet(3.0, 0.001)])  # faint noise (-65 dBFS) is quiet
    assert fed_in_blocks(activity, samples) == (int(RATE * 2.5) // 800) - 1
    assert activity.ended_at == int(RATE * 2.5)  # speech ended at 1.5 s, a second of quiet later it is over
    assert activity.speech_samples == RATE and activity.feed(tone(1.0))  # over stays over


def test_a_breath_shorter_than_the_pause_does_not_cut_the_sentence() -> None:
    activity = VoiceActivity(RATE, PauseRule(threshold_db=-40.0, pause_seconds=1.0))
    samples = np.concatenate([tone(0.6), quiet(0.9), tone(0.6), quiet(0.9)])
    assert fed_in_blocks(activity, samples) is None and activity.ended_at is None
    assert activity.speech_samples == int(RATE * 1.2) and activity.quiet_run == int(RATE * 0.9)


def test_quiet_before_any_speech_and_a_click_never_end_it() -> None:
    activity = VoiceActivity(RATE, PauseRule(threshold_db=-40.0, pause_seconds=0.5))
    samples = np.concatenate([quiet(5.0, 0.001), tone(0.2), quiet(2.0)])  # 0.2 s: under MIN_SPEECH_SECONDS
    assert fed_in_blocks(activity, samples) is None and not activity.spoke


def test_the_threshold_decides_what_is_speech() -> None:
    soft = np.concatenate([tone(1.0, 0.005), quiet(2.0)])  # -49 dBFS
    assert fed_in_blocks(VoiceActivity(RATE, PauseRule(threshold_db=-40.0, pause_seconds=1.0)), soft) is None
    sensitive = VoiceActivity(RATE, PauseRule(threshold_db=-55.0, pause_seconds=1.0))
    assert fed_in_blocks(sensitive, soft) is not None and sensitive.ended_at == 2 * RATE


def test_a_hands_free_recording_keeps_nothing_after_the_pause() -> None:
    activity = VoiceActivity(RATE, PauseRule(threshold_db=-40.0, pause_seconds=0.5))
    recording = Recording(RATE, activity=activity)
    samples = np.concatenate([tone(1.0), quiet(2.0)])
    ended = [recording.add(samples[start:start + 700]) for start in range(0, len(samples), 700)]  # not a window's size
    first = ended.index(True)
    assert not any(ended[:first]) and all(ended[first:])
    audio = recording.audio()
    assert audio is not None and len(audio.samples) == int(RATE * 1.5) == activity.ended_at
    assert np.array_equal(audio.samples, samples[: int(RATE * 1.5)])


def test_a_hands_free_recording_of_a_quiet_room_is_nothing() -> None:
    recording = Recording(RATE, max_seconds=3.0, activity=VoiceActivity(RATE, PauseRule(-40.0, 1.0)))
    assert recording.add(quiet(3.0, 0.001))  # full, and not a word said: not transcribed, so nothing is sent
    assert recording.audio() is None
    spoken = Recording(RATE, max_seconds=3.0, activity=VoiceActivity(RATE, PauseRule(-40.0, 1.0)))
    spoken.add(np.concatenate([quiet(1.0, 0.001), tone(0.5)]))  # stopped by hand after a few words
    audio = spoken.audio()
    assert audio is not None and len(audio.samples) == int(RATE * 1.5)
