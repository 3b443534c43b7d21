"""A transcript in the response formats of OpenAI's /v1/audio/transcriptions: json, text, verbose_json, srt, vtt."""

from __future__ import annotations

from typing import Any

from engine.voice.stt import Segment, Transcript

TRANSCRIPT_FORMATS = ("json", "text", "verbose_json", "srt", "vtt")
GRANULARITIES = ("segment", "word")


def transcript_body(transcript: Transcript, response_format: str, granularities: tuple[str, ...]) -> tuple[Any, str]:
    """(the body, its media type): a dict for the JSON formats, a string for the others."""
    if response_format == "json":
        return {"text": transcript.text}, "application/json"
    if response_format == "verbose_json":
        return verbose(transcript, granularities), "application/json"
    if response_format == "text":
        return transcript.text + "\n", "text/plain; charset=utf-8"
    if response_format == "srt":
        return srt(transcript.segments), "text/plain; charset=utf-8"
    return vtt(transcript.segments), "text/vtt; charset=utf-8"


def verbose(transcript: Transcript, granularities: tuple[str, ...]) -> dict[str, Any]:
    body: dict[str, Any] = {"task": "transcribe", "language": transcript.language,
                            "duration": transcript.duration_s, "text": transcript.text}
    if "segment" in granularities or not granularities:
        body["segments"] = [{"id": index, "start": segment.start_s, "end": segment.end_s, "text": segment.text}
                            for index, segment in enumerate(transcript.segments)]
    if "word" in granularities:
        body["words"] = [{"word": word.text, "start": word.start_s, "end": word.end_s}
                         for segment in transcript.segments for word in segment.words]
    return body


def srt(segments: tuple[Segment, ...]) -> str:
    cues = [f"{index}\n{_clock(segment.start_s, ',')} --> {_clock(segment.end_s, ',')}\n{segment.text}\n"
            for index, segment in enumerate(segments, 1)]
    return "\n".join(cues)


def vtt(segments: tuple[Segment, ...]) -> str:
    cues = [f"{_clock(segment.start_s, '.')} --> {_clock(segment.end_s, '.')}\n{segment.text}\n"
            for segment in segments]
    return "WEBVTT\n\n" + "\n".join(cues)


def _clock(seconds: float, decimal: str) -> str:
    """00:01:02,345 (SRT) or 00:01:02.345 (WebVTT)."""
    milliseconds = round(seconds * 1000)
    hours, rest = divmod(milliseconds, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{hours:02d}:{minutes:02d}:{rest // 1000:02d}{decimal}{rest % 1000:03d}"
