"""Spoken audio in the formats the speech API offers, encoded as it is made: a chunk in, bytes to send out.

wav (a streaming header, then the samples), pcm (the bare 16-bit samples, as OpenAI's pcm format),
mp3 (MP3 frames from LAME) and opus (Opus in Ogg pages of 100 ms, so it streams), both from the
ffmpeg libraries inside PyAV's wheel, which faster-whisper already brings: no ffmpeg program needed.
aac and flac are not offered.
"""

from __future__ import annotations

import io
from typing import Any, Protocol

import numpy as np

from engine.voice.audio import streaming_wav_header

SPEECH_FORMATS = ("wav", "pcm", "mp3", "opus")
MEDIA_TYPES = {"wav": "audio/wav", "pcm": "audio/pcm", "mp3": "audio/mpeg", "opus": "audio/ogg"}
MP3_BITRATE = 64000  # speech at 22 kHz mono: transparent enough, an eighth of the PCM's size
OPUS_BITRATE, OPUS_RATE = 32000, 48000  # Opus is made at 48 kHz; 32 kb/s is clear speech
OGG_PAGE_US = "100000"  # a page each 100 ms: the stream leaves as it is made, not once a second


class SpeechEncoder(Protocol):
    def start(self) -> bytes: ...

    def feed(self, pcm: bytes) -> bytes: ...

    def finish(self) -> bytes: ...


class PcmEncoder:
    def __init__(self, sample_rate: int, header: bool = False) -> None:
        self._header = streaming_wav_header(sample_rate) if header else b""

    def start(self) -> bytes:
        return self._header

    def feed(self, pcm: bytes) -> bytes:
        return pcm

    def finish(self) -> bytes:
        return b""


class Mp3Encoder:
    """LAME through PyAV; bare MP3 frames, which players read as a stream."""

    def __init__(self, sample_rate: int) -> None:
        import av

        self._av: Any = av
        self._codec: Any = av.CodecContext.create("libmp3lame", "w")
        self._codec.sample_rate, self._codec.layout, self._codec.format = sample_rate, "mono", "s16p"
        self._codec.bit_rate = MP3_BITRATE
        self._codec.open()
        self._sample_rate = sample_rate
        self._pts = 0

    def start(self) -> bytes:
        return b""

    def feed(self, pcm: bytes) -> bytes:
        samples = np.frombuffer(pcm, "<i2").reshape(1, -1)
        frame = self._av.AudioFrame.from_ndarray(samples, format="s16p", layout="mono")
        frame.sample_rate, frame.pts = self._sample_rate, self._pts
        self._pts += samples.shape[1]
        return b"".join(bytes(packet) for packet in self._codec.encode(frame))

    def finish(self) -> bytes:
        return b"".join(bytes(packet) for packet in self._codec.encode(None))


class _Pages(io.RawIOBase):
    """Where the Ogg muxer writes: kept until taken."""

    def __init__(self) -> None:
        self.written = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.written += data
        return len(data)

    def take(self) -> bytes:
        taken = bytes(self.written)
        self.written.clear()
        return taken


class OpusEncoder:
    """libopus through PyAV, resampled to 48 kHz, muxed in Ogg pages that are sent as they are written."""

    def __init__(self, sample_rate: int) -> None:
        import av

        self._av: Any = av
        self._pages = _Pages()
        self._container: Any = av.open(self._pages, mode="w", format="ogg",
                                       options={"page_duration": OGG_PAGE_US, "flush_packets": "1"})
        self._stream: Any = self._container.add_stream("libopus", rate=OPUS_RATE, layout="mono")
        self._stream.bit_rate = OPUS_BITRATE
        self._resampler: Any = av.AudioResampler(format="s16", layout="mono", rate=OPUS_RATE)
        self._sample_rate = sample_rate

    def start(self) -> bytes:
        return b""

    def feed(self, pcm: bytes) -> bytes:
        frame = self._av.AudioFrame.from_ndarray(np.frombuffer(pcm, "<i2").reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = self._sample_rate
        self._mux(self._resampler.resample(frame))
        return self._pages.take()

    def finish(self) -> bytes:
        self._mux(self._resampler.resample(None))
        for packet in self._stream.encode(None):
            self._container.mux(packet)
        self._container.close()
        return self._pages.take()

    def _mux(self, frames: Any) -> None:
        for frame in frames:
            for packet in self._stream.encode(frame):
                self._container.mux(packet)


def encoder_for(response_format: str, sample_rate: int) -> SpeechEncoder:
    if response_format == "mp3":
        return Mp3Encoder(sample_rate)
    if response_format == "opus":
        return OpusEncoder(sample_rate)
    return PcmEncoder(sample_rate, header=response_format == "wav")
