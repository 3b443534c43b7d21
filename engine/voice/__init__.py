"""Voice: speech to text (faster-whisper) and text to speech (Piper), Qt-free, on the CPU.

audio.py checks and converts audio; stt.py and tts.py hold the interfaces and what they carry;
whisper.py and piper_voice.py are the implementations, imported only where a model is loaded
(their libraries are the `voice` extra).
"""
