"""Which audio output reads aloud: Qt Multimedia where it can be imported, else sounddevice (PortAudio).

Qt Multimedia is in PySide6-Addons, which must match PySide6's version exactly and is not always to be
had for it; sounddevice is in the `voice` extra for the microphone anyway. Where neither loads, the
message names both ways, so the person can install whichever suits their system.
"""

from __future__ import annotations

from PySide6.QtCore import QObject

from app.voice.audio_out import AudioOut, AudioOutUnavailable, QtAudioOut
from app.voice.sounddevice_out import SoundDeviceAudioOut, SoundDeviceMissing

QT_MULTIMEDIA = "Qt Multimedia (pip install PySide6-Addons, PySide6's own version)"


def open_audio_out(parent: QObject | None = None) -> AudioOut:
    try:
        return QtAudioOut(parent)
    except AudioOutUnavailable:
        pass
    try:
        return SoundDeviceAudioOut(parent)
    except SoundDeviceMissing as missing:  # no speaker found (a plain AudioOutUnavailable) is said as it is
        raise AudioOutUnavailable(f"Reading aloud needs {missing.fix} or {QT_MULTIMEDIA}.") from None
