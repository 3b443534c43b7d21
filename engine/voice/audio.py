"""Audio in and out of the voice models: WAV bytes read and checked, resampled to the rate a model wants, written.

Everything a person or a client can send is checked here first, so a bad file gets one clear sentence
(AudioError) instead of a decoder's traceback: no bytes, bytes that are not audio, a WAV whose header
lies, more seconds than allowed, a rate no microphone records at. Samples travel as float32 mono in
[-1, 1]; what leaves for a speaker or a client is 16-bit little-endian PCM.
"""

from __future__ import annotations

import io
import struct
import wave
from dataclasses import dataclass

import numpy as np

MIN_RATE, MAX_RATE = 8000, 192000  # below: not speech a model can read; above: no recorder makes it
DEFAULT_MAX_SECONDS = 30 * 60.0
PCM_WIDTH = 2  # bytes per sample of what is written: 16-bit
FIR_TAPS = 63  # the low-pass before downsampling: enough to keep the aliasing out of the speech band


class AudioError(ValueError):
    """Audio that cannot be used; the message says what is wrong and what would work."""


@dataclass(frozen=True)
class Audio:
    samples: np.ndarray  # float32, mono, in [-1, 1]
    sample_rate: int

    @property
    def seconds(self) -> float:
        return len(self.samples) / self.sample_rate


def is_wav(data: bytes) -> bool:
    return data[:4] == b"RIFF" and data[8:12] == b"WAVE"


def read_wav(data: bytes, max_seconds: float = DEFAULT_MAX_SECONDS) -> Audio:
    """The samples of a PCM WAV file (8, 16, 24 or 32 bit; any channels, mixed down to mono)."""
    if not data:
        raise AudioError("The audio is empty: no bytes were sent.")
    if not is_wav(data):
        raise AudioError("This is not a WAV file (it does not start with RIFF....WAVE).")
    reader = _opened(data)
    channels, width, rate, frames = (reader.getnchannels(), reader.getsampwidth(), reader.getframerate(),
                                     reader.getnframes())
    check_length(frames / max(rate, 1), max_seconds)  # from the header: a 2-hour file is not read to be refused
    try:
        raw = reader.readframes(frames)
    except (wave.Error, EOFError, struct.error) as error:
        raise AudioError(f"The WAV file is damaged: its samples cannot be read ({error}).") from None
    check_rate(rate)
    if width not in (1, 2, 3, 4) or channels < 1:
        raise AudioError(f"The WAV file has {width * 8}-bit samples in {channels} channels: send 16-bit PCM.")
    usable = len(raw) // (width * channels) * width * channels
    if usable == 0:
        raise AudioError("The WAV file holds no samples: the recording is empty.")
    return Audio(_mono(_floats(raw[:usable], width), channels), rate)


def _opened(data: bytes) -> wave.Wave_read:
    try:
        return wave.open(io.BytesIO(data))
    except (wave.Error, EOFError, struct.error, RuntimeError, ValueError) as error:  # chunk.py raises bare ones
        raise AudioError(f"The WAV file is damaged: its header cannot be read ({error or 'cut short'}).") from None


def check_length(seconds: float, max_seconds: float) -> None:
    if seconds > max_seconds:
        raise AudioError(f"The audio is {_duration(seconds)} long; at most {_duration(max_seconds)} is accepted: "
                         "cut it into shorter parts.")


def check_rate(rate: int) -> None:
    if not MIN_RATE <= rate <= MAX_RATE:
        raise AudioError(f"The audio's sample rate is {rate} Hz; rates from {MIN_RATE} to {MAX_RATE} Hz are "
                         "accepted (16000 Hz is what speech models read).")


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} minutes" if seconds >= 120 else f"{seconds:.1f} seconds"


def _floats(raw: bytes, width: int) -> np.ndarray:
    if width == 1:  # 8-bit WAV is unsigned
        return (np.frombuffer(raw, np.uint8).astype(np.float32) - 128.0) / 128.0
    if width == 3:
        bytes3 = np.frombuffer(raw, np.uint8).reshape(-1, 3)
        widened = np.zeros((len(bytes3), 4), np.uint8)
        widened[:, 1:] = bytes3  # little-endian: the low byte left zero keeps the sign in the top byte
        return widened.view("<i4").reshape(-1).astype(np.float32) / 2.0**31
    dtype = "<i2" if width == 2 else "<i4"
    return np.frombuffer(raw, dtype).astype(np.float32) / float(2 ** (8 * width - 1))


def _mono(samples: np.ndarray, channels: int) -> np.ndarray:
    return samples if channels == 1 else samples.reshape(-1, channels).mean(axis=1).astype(np.float32)


def resampled(audio: Audio, rate: int) -> Audio:
    """The same sound at `rate`: low-passed below the new Nyquist first where it goes down, then interpolated."""
    if audio.sample_rate == rate:
        return audio
    samples = audio.samples
    if rate < audio.sample_rate:
        samples = np.convolve(samples, _low_pass(rate / audio.sample_rate), mode="same").astype(np.float32)
    count = max(1, round(len(samples) * rate / audio.sample_rate))
    positions = np.arange(count, dtype=np.float64) * (audio.sample_rate / rate)
    return Audio(np.interp(positions, np.arange(len(samples)), samples).astype(np.float32), rate)


def _low_pass(ratio: float) -> np.ndarray:
    """A windowed-sinc filter passing what is below `ratio` times the old Nyquist frequency."""
    middle = np.arange(FIR_TAPS) - (FIR_TAPS - 1) / 2
    taps = ratio * np.sinc(ratio * middle) * np.hamming(FIR_TAPS)
    return (taps / taps.sum()).astype(np.float32)


def pcm16(samples: np.ndarray) -> bytes:
    """Float samples as 16-bit little-endian PCM (what speakers, WAV files and the API's pcm format carry)."""
    return (np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


def wav_bytes(pcm: bytes, sample_rate: int) -> bytes:
    """A whole mono 16-bit WAV file around `pcm`."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(PCM_WIDTH)
        writer.setframerate(sample_rate)
        writer.writeframes(pcm)
    return buffer.getvalue()


def streaming_wav_header(sample_rate: int) -> bytes:
    """The header of a WAV whose length is not known yet: sizes set to the largest value, as streaming
    servers (and OpenAI's speech endpoint) send them; players read to the end of the stream."""
    unknown = 0xFFFFFFFF
    return (b"RIFF" + struct.pack("<I", unknown) + b"WAVE"
            + b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, sample_rate * PCM_WIDTH, PCM_WIDTH, 16)
            + b"data" + struct.pack("<I", unknown))
