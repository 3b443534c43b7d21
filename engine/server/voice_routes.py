"""/v1/audio/transcriptions and /v1/audio/speech, in OpenAI's shapes, run on the voice thread (voice_desk.py).

Transcriptions take OpenAI's multipart form (file, model, language, response_format,
timestamp_granularities[]); speech takes its JSON (input, voice, response_format, speed) and streams
the audio sentence by sentence as it is made. The server has one recognizer and one voice (its
--stt-model and --tts-voice): the `model` and `voice` a client names are accepted and not matched,
as clients send OpenAI's names (whisper-1, alloy).
"""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from typing import Literal

from pydantic import Field
from starlette.datastructures import FormData, Headers, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request
from starlette.responses import (
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)

from engine.server.bodies import read_body, read_json
from engine.server.errors import ApiError
from engine.server.options import ServerOptions
from engine.server.schema import _Strict, parse
from engine.server.transcripts import GRANULARITIES, TRANSCRIPT_FORMATS, transcript_body
from engine.server.voice_desk import VoiceDesk
from engine.voice.audio import AudioError
from engine.voice.encoders import MEDIA_TYPES, SPEECH_FORMATS, encoder_for
from engine.voice.stt import Transcript, decode_audio
from engine.voice.tts import MAX_SPEED, MIN_SPEED, TextToSpeech, speak

MAX_INPUT_CHARACTERS = 4096  # OpenAI's limit on /v1/audio/speech
_LANGUAGE = re.compile(r"^[a-z]{2,3}$")


class SpeechRequest(_Strict):
    model: str | None = None
    input: str
    voice: str | None = None
    response_format: str = "mp3"  # OpenAI's default
    speed: float = Field(default=1.0, ge=MIN_SPEED, le=MAX_SPEED)
    stream_format: Literal["audio"] = "audio"
    instructions: str | None = None  # a voice reads what it is given: accepted, not followed


class VoiceRoutes:
    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.desk = VoiceDesk(options)

    async def transcriptions(self, request: Request) -> Response:
        form = await _form(request, await read_body(request, self.options.max_audio_bytes))
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise ApiError(400, "Send the recording as the multipart field 'file'.", param="file")
        response_format, language, granularities = _transcription_options(form)
        data = await upload.read()
        recognizer = await self.desk.recognizer()

        def transcribe() -> Transcript:
            return recognizer.transcribe(decode_audio(data), language, words="word" in granularities)

        try:
            transcript = await self.desk.run(transcribe)
        except AudioError as error:
            raise ApiError(400, str(error), param="file", code="invalid_audio") from None
        body, media_type = transcript_body(transcript, response_format, granularities)
        if isinstance(body, dict):
            return JSONResponse(body)
        return PlainTextResponse(body, media_type=media_type)

    async def speech(self, request: Request) -> Response:
        body = parse(SpeechRequest, await read_json(request, self.options.max_body_bytes))
        if not body.input.strip():
            raise ApiError(400, "The input is empty: send the text to speak.", param="input")
        if len(body.input) > MAX_INPUT_CHARACTERS:
            raise ApiError(400, f"The input is {len(body.input)} characters; at most {MAX_INPUT_CHARACTERS} are "
                           "spoken at once.", param="input")
        if body.response_format not in SPEECH_FORMATS:
            raise ApiError(400, f"response_format {body.response_format!r} is not made here; this server speaks "
                           f"{', '.join(SPEECH_FORMATS)}.", param="response_format", code="unsupported_format")
        voice = await self.desk.voice()
        produce = _spoken(voice, body.input, body.speed, body.response_format)
        return StreamingResponse(self.desk.stream(produce), media_type=MEDIA_TYPES[body.response_format])

    def close(self) -> None:
        self.desk.close()


def _spoken(voice: TextToSpeech, text: str, speed: float,
            response_format: str) -> Callable[[threading.Event], Iterator[bytes]]:
    def produce(gone: threading.Event) -> Iterator[bytes]:
        encoder = encoder_for(response_format, voice.sample_rate)
        yield encoder.start()
        for chunk in speak(voice, [text], speed):
            yield encoder.feed(chunk.pcm)
            if gone.is_set():  # the client hung up: the rest is not made
                return
        yield encoder.finish()

    return produce


async def _form(request: Request, body: bytes) -> FormData:
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise ApiError(400, "Send the recording as multipart/form-data (the fields file, model, language, "
                       "response_format), as OpenAI's clients do.")

    async def chunks() -> AsyncGenerator[bytes, None]:
        yield body

    try:
        return await MultiPartParser(Headers(raw=request.headers.raw), chunks(), max_files=1).parse()
    except MultiPartException as error:
        raise ApiError(400, f"The multipart form cannot be read: {error.message}.") from None


def _transcription_options(form: FormData) -> tuple[str, str | None, tuple[str, ...]]:
    response_format = str(form.get("response_format") or "json")
    if response_format not in TRANSCRIPT_FORMATS:
        raise ApiError(400, f"response_format {response_format!r} is not one of {', '.join(TRANSCRIPT_FORMATS)}.",
                       param="response_format")
    language = str(form.get("language") or "").strip().lower() or None
    if language is not None and not _LANGUAGE.match(language):
        raise ApiError(400, f"language {language!r} is not an ISO 639-1 code such as en or de.", param="language")
    granularities = tuple(str(value) for key in ("timestamp_granularities[]", "timestamp_granularities")
                          for value in form.getlist(key))
    if any(value not in GRANULARITIES for value in granularities):
        raise ApiError(400, f"timestamp_granularities takes {' and '.join(GRANULARITIES)}.",
                       param="timestamp_granularities")
    if granularities and response_format != "verbose_json":
        raise ApiError(400, "timestamp_granularities needs response_format verbose_json.",
                       param="timestamp_granularities")
    return response_format, language, granularities
