"""The server's voice models and the one thread that runs them, so the event loop keeps serving chat streams.

Recognizing a minute of speech takes seconds of CPU; done on the event loop, every stream the server
is writing would stall for that long. Here each piece of voice work is a job on the "hearth-voice"
thread, awaited as an asyncio future; speech streams its encoded chunks back through an asyncio
queue as each sentence is made, and stops between sentences once the client has gone. The models are
loaded on first use (on the same thread) and stay.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from engine.server.errors import ApiError
from engine.server.options import ServerOptions
from engine.voice.stt import SpeechToText
from engine.voice.tts import TextToSpeech

T = TypeVar("T")


class VoiceDesk:
    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._speech_to_text: SpeechToText | None = None
        self._text_to_speech: TextToSpeech | None = None
        self._thread: threading.Thread | None = None
        if options.stt_model or options.tts_voice:  # no thread for a server without voice
            self._thread = threading.Thread(target=self._work, name="hearth-voice", daemon=True)
            self._thread.start()

    def close(self) -> None:
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join(30)
            self._thread = None

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()

    async def run(self, work: Callable[[], T]) -> T:
        """`work()` on the voice thread; its result or its exception here."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def job() -> None:
            try:
                result = work()
            except BaseException as error:  # noqa: BLE001 - handed to the awaiting request, which answers it
                loop.call_soon_threadsafe(_settle, future, None, error)
            else:
                loop.call_soon_threadsafe(_settle, future, result, None)

        self._jobs.put(job)
        return await future

    async def stream(self, produce: Callable[[threading.Event], Iterator[bytes]]) -> AsyncIterator[bytes]:
        """The bytes `produce` yields on the voice thread, each as soon as it is made; `produce` sees the event
        set once the reader has gone, and stops."""
        loop = asyncio.get_running_loop()
        parts: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue()
        gone = threading.Event()

        def job() -> None:
            try:
                for part in produce(gone):
                    loop.call_soon_threadsafe(parts.put_nowait, part)
            except BaseException as error:  # noqa: BLE001 - the stream has started: it can only end early
                loop.call_soon_threadsafe(parts.put_nowait, error)
            loop.call_soon_threadsafe(parts.put_nowait, None)

        self._jobs.put(job)
        try:
            while (part := await parts.get()) is not None:
                if isinstance(part, BaseException):
                    raise part
                yield part
        finally:
            gone.set()

    async def recognizer(self) -> SpeechToText:
        """The recognizer, loaded on first use (on the voice thread)."""
        if not self.options.stt_model:
            raise not_configured("speech-to-text model", "--stt-model DIR (a faster-whisper model folder)")
        return await self.run(self._load_speech_to_text)

    async def voice(self) -> TextToSpeech:
        """The voice, loaded on first use (on the voice thread)."""
        if not self.options.tts_voice:
            raise not_configured("text-to-speech voice", "--tts-voice FILE (a Piper voice's .onnx)")
        return await self.run(self._load_text_to_speech)

    def _load_speech_to_text(self) -> SpeechToText:
        if self._speech_to_text is None:
            from engine.voice.whisper import FasterWhisper, SpeechModelError

            try:
                self._speech_to_text = FasterWhisper(self.options.stt_model, self.options.voice_threads)
            except SpeechModelError as error:
                raise ApiError(500, str(error), code="model_not_loaded") from None
        return self._speech_to_text

    def _load_text_to_speech(self) -> TextToSpeech:
        if self._text_to_speech is None:
            from engine.voice.piper_voice import PiperSpeech, VoiceError

            try:
                self._text_to_speech = PiperSpeech(self.options.tts_voice, self.options.voice_threads)
            except VoiceError as error:
                raise ApiError(500, str(error), code="model_not_loaded") from None
        return self._text_to_speech


def not_configured(what: str, flag: str) -> ApiError:
    return ApiError(404, f"This server has no {what}: start hearth-serve with {flag}.", code="model_not_found")


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
