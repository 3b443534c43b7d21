"""/v1/audio/transcriptions and /v1/audio/speech with the real openai client, the real Piper voice and Whisper base.

Recognized text is scored by word error rate (a bound, not an exact string); errors are checked for
OpenAI's shape; a chat answers while the voice thread is busy.
"""

from __future__ import annotations

import asyncio
import struct
import threading
from collections.abc import Iterator

import openai
import pytest

from engine.clients import EngineHost
from engine.server import ApiServer, ServerOptions
from engine.server.cli import parse
from engine.voice.audio import read_wav, wav_bytes
from engine.voice.stt import decode_audio
from engine.voice.tts import speak
from engine.voice.wer import word_error_rate

SAID = "Please turn off the kitchen lights before you leave."
# No numbers: Whisper writes "three" as "3", which the word error rate counts against it. Piper draws its noise
# anew each call, so the sentences are ones Whisper base heard whole 30 times of 30 ("She bought green apples"
# came back as "Chee-bot green apples and the loaf" 3 times of 30, a step from the limit)
SPOKEN = "The weather is nice today. We will walk to the park after lunch."
AUDIO_LIMIT = 2 * 2**20


@pytest.fixture(scope="module")
def voice_server(engine: EngineHost, speech_model: str, voice_model: str) -> Iterator[ApiServer]:
    api = ApiServer(engine, ServerOptions(port=0, stt_model=speech_model, tts_voice=voice_model,
                                          max_audio_bytes=AUDIO_LIMIT))
    api.start()
    yield api
    api.stop()


@pytest.fixture
def voice_client(voice_server: ApiServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=voice_server.url, api_key="unused", max_retries=0, timeout=120) as api:
        yield api


@pytest.fixture(scope="module")
def said_wav(text_to_speech) -> bytes:  # type: ignore[no-untyped-def]
    return wav_bytes(b"".join(chunk.pcm for chunk in speak(text_to_speech, [SAID])), text_to_speech.sample_rate)


def test_a_recording_is_transcribed_as_json(voice_client: openai.OpenAI, said_wav: bytes) -> None:
    heard = voice_client.audio.transcriptions.create(model="whisper-1", file=("said.wav", said_wav, "audio/wav"))
    assert word_error_rate([(SAID, heard.text)]) <= 0.25, heard.text


def test_verbose_json_has_the_language_segments_and_words(voice_client: openai.OpenAI, said_wav: bytes) -> None:
    heard = voice_client.audio.transcriptions.create(
        model="whisper-1", file=("said.wav", said_wav), response_format="verbose_json",
        timestamp_granularities=["word", "segment"])
    assert heard.language == "en" and heard.duration == pytest.approx(read_wav(said_wav).seconds, abs=0.01)
    assert heard.segments and heard.segments[0].start < heard.segments[-1].end <= heard.duration + 0.5
    assert heard.words and len(heard.words) >= 6 and heard.words[0].start <= heard.words[-1].start
    assert word_error_rate([(SAID, " ".join(word.word for word in heard.words))]) <= 0.25


def test_srt_vtt_and_text(voice_client: openai.OpenAI, said_wav: bytes) -> None:
    srt = voice_client.audio.transcriptions.create(model="whisper-1", file=("said.wav", said_wav),
                                                   response_format="srt", language="en")
    vtt = voice_client.audio.transcriptions.create(model="whisper-1", file=("said.wav", said_wav),
                                                   response_format="vtt", language="en")
    text = voice_client.audio.transcriptions.create(model="whisper-1", file=("said.wav", said_wav),
                                                    response_format="text", language="en")
    assert str(srt).startswith("1\n00:00:00,000 --> 00:00:0") and str(vtt).startswith("WEBVTT\n\n00:00:00.000 --> ")
    assert word_error_rate([(SAID, str(text))]) <= 0.25


def test_speech_streams_a_wav_that_whisper_hears(voice_client: openai.OpenAI, speech_to_text) -> None:  # type: ignore[no-untyped-def]
    with voice_client.audio.speech.with_streaming_response.create(
            model="tts-1", voice="alloy", input=SPOKEN, response_format="wav") as response:
        assert response.headers["content-type"] == "audio/wav"
        body = b"".join(response.iter_bytes())
    assert body[:4] == b"RIFF" and body[36:44] == b"data\xff\xff\xff\xff"  # a streaming header: length unknown
    rate = struct.unpack("<I", body[24:28])[0]
    heard = speech_to_text.transcribe(read_wav(wav_bytes(body[44:], rate)), language="en")
    assert word_error_rate([(SPOKEN, heard.text)]) <= 0.25, heard.text


def test_speech_as_pcm_mp3_opus_and_faster(voice_client: openai.OpenAI) -> None:
    def spoken(response_format: str, speed: float = 1.0, text: str = SAID) -> bytes:
        with voice_client.audio.speech.with_streaming_response.create(
                model="tts-1", voice="alloy", input=text, response_format=response_format, speed=speed) as response:
            return b"".join(response.iter_bytes())

    pcm, fast = spoken("pcm"), spoken("pcm", speed=2.0, text=f"{SPOKEN} {SAID} {SPOKEN}")
    # ~0.6, not 0.5 (Piper's shortest phonemes do not shrink); the same speed gives 0.94 to 1.06 over five sentences
    assert len(pcm) % 2 == 0 and 0.45 < len(fast) / len(spoken("pcm", text=f"{SPOKEN} {SAID} {SPOKEN}")) < 0.8
    mp3 = spoken("mp3")
    assert mp3[0] == 0xFF and mp3[1] & 0xE0 == 0xE0  # an MPEG audio frame's sync bits
    # Piper's durations are drawn with noise (each call a little different): a sentence's length, not the same one
    assert 1.5 < decode_audio(mp3).seconds < 5 and len(mp3) < len(pcm) / 4
    opus = spoken("opus")
    assert opus[:4] == b"OggS" and b"OpusHead" in opus[:100] and 1.5 < decode_audio(opus).seconds < 5


@pytest.mark.parametrize(("data", "says"), [(b"", "empty"), (b"<html>not a recording</html>" * 20, "not audio"),
                                            (b"RIFF\x10\x00\x00\x00WAVEjunkjunk", "damaged")])
def test_bad_audio_is_a_400_in_openais_shape(voice_client: openai.OpenAI, data: bytes, says: str) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        voice_client.audio.transcriptions.create(model="whisper-1", file=("bad.wav", data))
    error = refused.value.body
    assert isinstance(error, dict) and error["code"] == "invalid_audio" and error["param"] == "file"
    assert says in error["message"] and error["type"] == "invalid_request_error"


def test_too_large_is_a_413_and_unknown_formats_a_400(voice_client: openai.OpenAI) -> None:
    with pytest.raises(openai.APIStatusError) as refused:
        voice_client.audio.transcriptions.create(model="whisper-1", file=("big.wav", b"\x00" * (AUDIO_LIMIT + 1)))
    assert refused.value.status_code == 413 and "larger than 2 MiB" in refused.value.message
    with pytest.raises(openai.BadRequestError, match="this server speaks wav, pcm, mp3, opus"):
        voice_client.audio.speech.create(model="tts-1", voice="alloy", input="Hi.", response_format="aac")
    with pytest.raises(openai.BadRequestError, match="input is empty"):
        voice_client.audio.speech.create(model="tts-1", voice="alloy", input="  ", response_format="wav")


def test_without_voice_models_the_endpoints_say_how_to_set_them(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError, match="start hearth-serve with --stt-model DIR"):
        client.audio.transcriptions.create(model="whisper-1", file=("a.wav", wav_bytes(b"\x00" * 3200, 16000)))
    with pytest.raises(openai.NotFoundError, match="--tts-voice FILE"):
        client.audio.speech.create(model="tts-1", voice="alloy", input="Hi.")


def test_a_chat_answers_while_the_voice_thread_is_busy(voice_server: ApiServer, voice_client: openai.OpenAI,
                                                       said_wav: bytes) -> None:
    release, finished = threading.Event(), []
    desk = voice_server._uvicorn.config.app.state.voice.desk  # type: ignore[union-attr]
    assert voice_server._aio is not None
    blocked = asyncio.run_coroutine_threadsafe(desk.run(lambda: release.wait(60)), voice_server._aio)
    waiting = threading.Thread(target=lambda: finished.append(voice_client.audio.transcriptions.create(
        model="whisper-1", file=("said.wav", said_wav), response_format="text")))
    waiting.start()
    try:
        chat = voice_client.chat.completions.create(model=voice_client.models.list().data[0].id, messages=[{"role": "user", "content": "Hi"}],
                                                    max_tokens=4, temperature=0, stream=True)
        assert [chunk for chunk in chat if chunk.choices and chunk.choices[0].delta.content]
        assert not finished and not blocked.done()  # the voice thread is still held: the chat did not wait on it
    finally:
        release.set()
        waiting.join(120)
    assert blocked.result(5) is True and finished and word_error_rate([(SAID, str(finished[0]))]) <= 0.25


def test_hearth_serve_checks_the_voice_paths_at_start(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit):
        parse(["--stt-model", str(tmp_path)])
    assert "is not a faster-whisper model: model.bin, config.json missing" in capsys.readouterr().err
    (tmp_path / "v.onnx").write_bytes(b"x")
    with pytest.raises(SystemExit):
        parse(["--tts-voice", str(tmp_path / "v.onnx")])
    assert "has no v.onnx.json beside it" in capsys.readouterr().err
