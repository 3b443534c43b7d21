"""Settings > Voice: the voice, its speed and the speech model load, save, and a wrong file is said on the page."""

from __future__ import annotations

from pathlib import Path

from app.settings.store import Settings
from app.settings.voice_section import VoiceSection


def test_load_collect_and_what_is_refused(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(tmp_path / "settings.json", {})
    section = VoiceSection()
    qtbot.addWidget(section)
    section.load(settings)
    assert (section.voice_edit.text(), section.speed_spin.value(), section.model_edit.text()) == ("", 1.0, "")
    assert section.problem() == ""
    voice = tmp_path / "en_US-test-medium.onnx"
    voice.write_bytes(b"onnx")
    section.voice_edit.setText(str(voice))
    assert section.problem() == "The voice en_US-test-medium.onnx has no en_US-test-medium.onnx.json beside it: " \
                                "Piper needs both files."
    (tmp_path / "en_US-test-medium.onnx.json").write_text("{}")
    assert section.problem() == ""
    section.model_edit.setText(str(tmp_path))
    assert "is not a faster-whisper model: model.bin, config.json missing" in section.problem()
    for name in ("model.bin", "config.json"):
        (tmp_path / name).write_text("x")
    section.speed_spin.setValue(1.25)
    assert section.problem() == "" and not section.send_dictation_box.isChecked()
    section.language_edit.setText("English")
    assert section.problem() == ("The dictation language 'English' is not a language code: write one such as en, de "
                                 "or fr, or leave it empty to have it detected.")
    section.language_edit.setText(" DE ")
    section.send_dictation_box.setChecked(True)
    assert not section.hands_free_box.isChecked() and not section.pause_spin.isEnabled()  # off: its figures too
    assert not section.keep_listening_box.isEnabled() and not section.keep_listening_box.isChecked()
    section.hands_free_box.setChecked(True)
    assert section.pause_spin.isEnabled() and section.threshold_spin.isEnabled()
    assert section.keep_listening_box.isEnabled()
    section.keep_listening_box.setChecked(True)
    assert (section.pause_spin.value(), section.threshold_spin.value()) == (1.5, -40.0)
    section.pause_spin.setValue(0.75)
    section.threshold_spin.setValue(-90)
    assert section.problem() == ""
    section.collect(settings)
    assert (settings.get("voice.tts_voice"), settings.get("voice.speed"), settings.get("voice.stt_model"),
            settings.get("voice.language"), settings.get("voice.send_dictation")) == (
        str(voice), 1.25, str(tmp_path), "de", True)
    assert (settings.get("voice.hands_free"), settings.get("voice.pause_seconds"),
            settings.get("voice.speech_threshold_db"), settings.get("voice.keep_listening")) == (
        True, 0.75, -70.0, True)  # the quietest threshold it offers
    section.load(settings)
    assert section.keep_listening_box.isChecked() and section.keep_listening_box.isEnabled()
    section.speed_spin.setValue(9)
    assert section.speed_spin.value() == 4.0  # OpenAI's range, as the engine checks it


def test_the_window_api_gets_the_voice_models(tmp_path: Path) -> None:
    from app.settings.store import server_options

    settings = Settings(tmp_path / "settings.json", {})
    settings.set("server.enabled", True)
    options = server_options(settings)
    assert options is not None and (options.stt_model, options.tts_voice) == ("", "")
    settings.set("voice.tts_voice", str(tmp_path / "a.onnx"))
    settings.set("voice.stt_model", f" {tmp_path} ")
    options = server_options(settings)
    assert options is not None and (options.stt_model, options.tts_voice) == (str(tmp_path), str(tmp_path / "a.onnx"))
