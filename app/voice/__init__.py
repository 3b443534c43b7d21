"""The window's voice: reading answers aloud (read_aloud.py) through Qt Multimedia (audio_out.py) or PortAudio
(sounddevice_out.py), whichever loads (speaker.py)."""
