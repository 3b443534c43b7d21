"""Read aloud: an answer's speaker button speaks it with the Piper voice of Settings > Voice.

The voice is loaded and each sentence synthesized on a worker thread (never the GUI thread: a
sentence takes a fraction of a second, loading the voice about one); each sentence's PCM comes back
through a queued signal and goes to the audio output as it arrives, so the first sentence plays
while the next is made. Pressing the button again, reading another answer, or Stop ends it. A reading
that ends by itself says `playback_finished` once the speaker has played its last sentence (a spoken
conversation, app/voice/conversation.py, listens again only then).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from app.chat.message_list import MessageCard, MessageList
from app.misc.thread_relay import emit_from_thread
from app.settings.store import Settings
from app.voice.audio_out import AudioOut, AudioOutUnavailable
from app.voice.speaker import open_audio_out
from engine.paths import user_path
from engine.voice.tts import TextToSpeech, speak

_voices: dict[str, TextToSpeech] = {}  # loaded once per file: the next answer starts without the load
_voices_lock = threading.Lock()


@dataclass(frozen=True)
class VoiceChoice:
    voice_path: str
    speed: float = 1.0


def voice_choice(settings: Settings | None) -> VoiceChoice | None:
    """What Settings > Voice chose; None without settings (a tab made by a test) or a voice."""
    if settings is None or not settings.get("voice.tts_voice"):
        return None
    return VoiceChoice(user_path(settings.get("voice.tts_voice")), float(settings.get("voice.speed")))


def loaded_voice(path: str) -> TextToSpeech:
    from engine.voice.piper_voice import PiperSpeech

    with _voices_lock:
        if path not in _voices:
            _voices[path] = PiperSpeech(path, threads=2)
        return _voices[path]


class ReadAloud(QObject):
    """One tab's reading: at most one answer at a time."""

    chunk_made = Signal(object, bytes, int)  # the reading's stop event, 16-bit PCM, its sample rate (worker thread)
    reading_finished = Signal(object, str)  # the stop event, "" or what went wrong (worker thread)
    failed = Signal(str)  # a sentence for the person: no voice chosen, no audio output, a voice that cannot load
    playback_finished = Signal()  # a reading that ended by itself has been heard to its end

    def __init__(self, choice: Callable[[], VoiceChoice | None], view: MessageList, parent: QObject | None = None,
                 audio_out: Callable[[], AudioOut] | None = None) -> None:
        super().__init__(parent)
        self._choice, self._make_out = choice, audio_out or (lambda: open_audio_out(self))
        self._out: AudioOut | None = None
        self.card: MessageCard | None = None  # the answer being read
        self._stop: threading.Event | None = None
        self._playing: threading.Event | None = None  # a reading made to its end whose last sentences still play
        view.read_aloud_requested.connect(self._on_read_aloud_requested)
        self.chunk_made.connect(self._on_chunk_made)
        self.reading_finished.connect(self._on_reading_finished)

    @property
    def reading(self) -> bool:
        return self._stop is not None

    @property
    def speaking(self) -> bool:
        """Being made or still coming out of the speaker."""
        return self._stop is not None or self._playing is not None

    def read(self, card: MessageCard) -> None:
        text = card.text()
        if self.begin(lambda stop: [text], card):
            card.read_aloud_button.setText("Stop reading")

    def begin(self, pieces: Callable[[threading.Event], Iterable[str]], card: MessageCard | None = None) -> bool:
        """Speak the text `pieces(stop)` yields, sentence by sentence as it comes (it ends once `stop` is set);
        False, with `failed` said, where there is no voice or no audio output."""
        self.stop()
        choice = self._choice()
        if choice is None or not choice.voice_path:
            self.failed.emit("Choose a voice (a Piper .onnx file) in Settings > Voice to have answers read aloud; "
                             "its Get voice models… downloads one.")
            return False
        try:
            if self._out is None:
                self._out = self._make_out()
                self._out.playback_finished.connect(self._on_playback_finished)
        except AudioOutUnavailable as error:
            self.failed.emit(str(error))
            return False
        self.card, self._stop = card, threading.Event()
        worker = threading.Thread(target=self._work, args=(pieces(self._stop), choice, self._stop), name="read-aloud",
                                  daemon=True)
        worker.start()
        return True

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()
        self._stop = self._playing = None
        if self._out is not None:
            self._out.stop()
        self._reset_button()

    def _work(self, pieces: Iterable[str], choice: VoiceChoice, stop: threading.Event) -> None:
        problem = ""
        try:
            voice = loaded_voice(choice.voice_path)
            for chunk in speak(voice, pieces, choice.speed):
                if stop.is_set() or not emit_from_thread(self, "chunk_made", stop, chunk.pcm, chunk.sample_rate):
                    return
        except Exception as error:  # noqa: BLE001 - said to the person; the window goes on
            problem = f"The answer could not be read aloud: {error}"
        emit_from_thread(self, "reading_finished", stop, problem)

    def _on_chunk_made(self, stop: threading.Event, pcm: bytes, sample_rate: int) -> None:
        if stop is not self._stop or self._out is None:  # a chunk of a reading already stopped is dropped
            return
        try:
            self._out.play(pcm, sample_rate)
        except AudioOutUnavailable as error:  # the speaker would not open (PortAudio says so only now)
            self.stop()
            self.failed.emit(str(error))

    def _on_reading_finished(self, stop: threading.Event, problem: str) -> None:
        if stop is not self._stop:
            return
        self._stop, self._playing = None, stop  # the output plays out what it has
        self._reset_button()
        if problem:
            self.failed.emit(problem)
        if self._out is not None:
            self._out.finish()

    def _on_playback_finished(self) -> None:
        if self._playing is not None:
            self._playing = None
            self.playback_finished.emit()

    def _on_read_aloud_requested(self, card: MessageCard) -> None:
        if self.card is card and self.reading:
            self.stop()
        else:
            self.read(card)

    def _reset_button(self) -> None:
        if self.card is not None:
            self.card.read_aloud_button.setText("Read aloud")
        self.card = None
