"""The level meter's speech-threshold marker in the real window (offscreen): hands-free's threshold from Settings >
Voice stands on the meter where that loudness would fill it, drawn in the meter's own pixels; without
hands-free there is no threshold and no marker."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from app.voice.level_meter import MARKER_COLOR, meter_value
from app.voice.microphone import level
from engine.voice.audio import Audio
from tests.app.voice.played_microphone import PlayedMicrophone

QUIET = Audio(np.zeros(16000 * 2, np.float32), 16000)


def listening_meter(window, qtbot, hands_free: bool, threshold_db: float):  # type: ignore[no-untyped-def]
    window.settings.set("voice.stt_model", "/models/whisper")  # never loaded: Esc ends each test
    window.settings.set("voice.hands_free", hands_free)
    window.settings.set("voice.speech_threshold_db", threshold_db)
    tab = window.current_tab()
    tab.dictation.use_microphone(PlayedMicrophone(QUIET))
    tab.dictation.clock = iter([10.0, 10.1]).__next__
    qtbot.mouseClick(tab.dictation.button, Qt.MouseButton.LeftButton)
    assert tab.dictation.recording and tab.dictation.meter.isVisible()
    return tab, tab.dictation.meter


def is_marker(color: QColor) -> bool:
    return color.red() > 150 and color.green() < 110 and color.blue() < 110


@pytest.mark.parametrize("threshold_db", [-40.0, -15.0])
def test_the_marker_stands_at_the_threshold(scripted_window, qtbot, threshold_db: float) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    tab, meter = listening_meter(window, qtbot, True, threshold_db)
    loud_as_threshold = np.full(1600, 10 ** (threshold_db / 20), np.float32)  # a block exactly that loud (RMS)
    assert meter.threshold == pytest.approx(level(loud_as_threshold), abs=0.5)  # where that block fills the bar
    assert meter.threshold == pytest.approx((threshold_db + 60) / 60 * 100)
    x = meter.marker_x()
    assert x == round(meter.threshold / 100 * meter.width())
    image = meter.grab().toImage()
    middle = image.height() // 2
    assert is_marker(QColor(MARKER_COLOR)) and is_marker(image.pixelColor(x, middle))
    assert [c for c in range(image.width()) if is_marker(image.pixelColor(c, middle))] == list(range(x - 1, x + 1))
    assert str(threshold_db).rstrip("0").rstrip(".") in meter.toolTip()
    qtbot.keyClick(tab.input, Qt.Key.Key_Escape)


def test_without_hands_free_there_is_no_marker(scripted_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    tab, meter = listening_meter(window, qtbot, False, -40.0)
    assert meter.threshold is None and meter.marker_x() is None
    image = meter.grab().toImage()
    assert not any(is_marker(image.pixelColor(c, image.height() // 2)) for c in range(image.width()))
    qtbot.keyClick(tab.input, Qt.Key.Key_Escape)


def test_the_scale_ends_clamp() -> None:
    assert (meter_value(-70.0), meter_value(-60.0), meter_value(-30.0), meter_value(0.0), meter_value(6.0)) == (
        0.0, 0.0, 50.0, 100.0, 100.0)
