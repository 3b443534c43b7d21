"""The settings dialog's Voice section: the voice answers are read aloud with, its speed, the speech model.

A Piper voice is an .onnx file with its .onnx.json beside it (rhasspy/piper-voices has one per
language); the speech-to-text model a faster-whisper folder (the local API's transcriptions use it).
Both are checked here the way the engine checks them, so a wrong file is said on this page, not when
an answer is first read aloud.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from app.settings.store import Settings
from app.voice.voice_activity import MAX_PAUSE_SECONDS, MAX_THRESHOLD_DB, MIN_PAUSE_SECONDS, MIN_THRESHOLD_DB
from engine.paths import user_path
from engine.voice.tts import MAX_SPEED, MIN_SPEED

if TYPE_CHECKING:
    from app.models.voice_dialog import VoiceModelsDialog


class VoiceSection(QGroupBox):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Voice", parent)
        self.voice_edit = QLineEdit()
        self.voice_edit.setPlaceholderText("a Piper voice: en_US-lessac-medium.onnx (its .onnx.json beside it)")
        self.voice_button = QPushButton("Choose…")
        self.voice_button.clicked.connect(self._on_choose_voice)
        self.speed_spin = QDoubleSpinBox()
        self.speed_spin.setRange(MIN_SPEED, MAX_SPEED)
        self.speed_spin.setSingleStep(0.1)
        self.speed_spin.setDecimals(2)
        self.speed_spin.setSuffix(" ×")
        self.speed_spin.setToolTip("1 is the voice's own pace; 1.5 says the same in two thirds of the time")
        self.model_edit = QLineEdit()
        self.model_edit.setPlaceholderText("a faster-whisper model folder (model.bin, config.json, tokenizer.json)")
        self.model_button = QPushButton("Choose…")
        self.model_button.clicked.connect(self._on_choose_model)
        self.language_edit = QLineEdit()
        self.language_edit.setPlaceholderText("detected from the speech, or a code: en, de, fr…")
        self.language_edit.setToolTip("The language you dictate in (ISO 639-1); a short phrase is recognized more "
                                      "surely when the model need not guess it")
        self.send_dictation_box = QCheckBox("Send a dictated message as soon as it is transcribed")
        self.send_dictation_box.setToolTip("Off: the words land in the message box for you to edit and send")
        self._build_hands_free()
        self.get_button = QPushButton("Get voice models…")
        self.get_button.setToolTip("Speech-to-text models and Piper voices from the Hugging Face Hub, with sizes")
        self.get_button.clicked.connect(self.open_get_voice_models)
        self.problem_label = QLabel(wordWrap=True)
        self.problem_label.setStyleSheet("color: #c62828")
        self.problem_label.hide()
        hint = QLabel("Answers are read aloud with the voice (the speaker button on an answer); the microphone "
                      "button beside the message box transcribes with the speech model; the local API's "
                      "/v1/audio/speech and /v1/audio/transcriptions use both.", wordWrap=True)
        hint.setProperty("role", "hint")
        grid = QGridLayout(self)
        for row, (label, field, button) in enumerate((("Voice", self.voice_edit, self.voice_button),
                                                      ("Speed", self.speed_spin, None),
                                                      ("Speech to text", self.model_edit, self.model_button),
                                                      ("Dictation language", self.language_edit, None))):
            grid.addWidget(QLabel(label), row, 0)
            grid.addWidget(field, row, 1)
            if button is not None:
                grid.addWidget(button, row, 2)
        grid.addWidget(self.send_dictation_box, 4, 1, 1, 2)
        grid.addWidget(self.hands_free_box, 5, 1, 1, 2)
        for row, (label, field) in enumerate((("Pause that ends it", self.pause_spin),
                                              ("Speech threshold", self.threshold_spin)), start=6):
            grid.addWidget(QLabel(label), row, 0)
            grid.addWidget(field, row, 1)
        grid.addWidget(self.keep_listening_box, 8, 1, 1, 2)
        grid.addWidget(hint, 9, 0, 1, 3)
        grid.addWidget(self.get_button, 10, 0, 1, 2, Qt.AlignmentFlag.AlignLeft)
        grid.addWidget(self.problem_label, 11, 0, 1, 3)
        grid.setColumnStretch(1, 1)

    def _build_hands_free(self) -> None:
        self.hands_free_box = QCheckBox("Hands-free: a pause after you speak ends the message and sends it")
        self.hands_free_box.setToolTip("Click the microphone once and talk; Esc cancels. Holding the button or "
                                       "Ctrl+Space still stops when you let go")
        self.pause_spin = QDoubleSpinBox()
        self.pause_spin.setRange(MIN_PAUSE_SECONDS, MAX_PAUSE_SECONDS)
        self.pause_spin.setSingleStep(0.25)
        self.pause_spin.setDecimals(2)
        self.pause_spin.setSuffix(" s")
        self.pause_spin.setToolTip("How long you are quiet before the message is over; a breath between words is "
                                   "shorter")
        self.threshold_spin = QDoubleSpinBox()
        self.threshold_spin.setRange(MIN_THRESHOLD_DB, MAX_THRESHOLD_DB)
        self.threshold_spin.setSingleStep(5.0)
        self.threshold_spin.setDecimals(0)
        self.threshold_spin.setSuffix(" dBFS")
        self.threshold_spin.setToolTip("How loud the microphone must hear you for it to be speech: lower hears "
                                       "softer speech, and more of the room's noise (the level meter's left end "
                                       "is -60, its right end 0; a red mark on it shows this threshold)")
        self.keep_listening_box = QCheckBox("Keep listening after each answer")
        self.keep_listening_box.setToolTip("With the chat's Answer aloud on: once the answer has been spoken, the "
                                           "microphone listens for your next message; Esc, Stop or the microphone "
                                           "button ends the conversation")
        for field in (self.pause_spin, self.threshold_spin, self.keep_listening_box):
            self.hands_free_box.toggled.connect(field.setEnabled)
            field.setEnabled(False)  # until hands-free is on

    def load(self, settings: Settings) -> None:
        self.voice_edit.setText(settings.get("voice.tts_voice"))
        self.speed_spin.setValue(float(settings.get("voice.speed")))
        self.model_edit.setText(settings.get("voice.stt_model"))
        self.language_edit.setText(settings.get("voice.language"))
        self.send_dictation_box.setChecked(bool(settings.get("voice.send_dictation")))
        self.hands_free_box.setChecked(bool(settings.get("voice.hands_free")))
        self.pause_spin.setValue(float(settings.get("voice.pause_seconds")))
        self.threshold_spin.setValue(float(settings.get("voice.speech_threshold_db")))
        self.keep_listening_box.setChecked(bool(settings.get("voice.keep_listening")))
        for field in (self.pause_spin, self.threshold_spin, self.keep_listening_box):
            field.setEnabled(self.hands_free_box.isChecked())

    def collect(self, target: Settings) -> None:
        target.set("voice.tts_voice", self.voice_edit.text().strip())
        target.set("voice.speed", round(self.speed_spin.value(), 2))
        target.set("voice.stt_model", self.model_edit.text().strip())
        target.set("voice.language", self.language_edit.text().strip().lower())
        target.set("voice.send_dictation", self.send_dictation_box.isChecked())
        target.set("voice.hands_free", self.hands_free_box.isChecked())
        target.set("voice.pause_seconds", round(self.pause_spin.value(), 2))
        target.set("voice.speech_threshold_db", float(round(self.threshold_spin.value())))
        target.set("voice.keep_listening", self.keep_listening_box.isChecked())

    def problem(self) -> str:
        """Why the section cannot be saved as it is ("" : it can)."""
        from engine.voice.piper_voice import VoiceError, check_voice_file
        from engine.voice.whisper import SpeechModelError, check_model_folder

        voice, model = self.voice_edit.text().strip(), self.model_edit.text().strip()
        try:
            if voice:
                check_voice_file(user_path(voice))
            if model:
                check_model_folder(user_path(model))
        except (VoiceError, SpeechModelError) as error:
            return str(error)
        language = self.language_edit.text().strip()
        if language and not re.fullmatch(r"[A-Za-z]{2,3}", language):
            return (f"The dictation language {language!r} is not a language code: write one such as en, de or fr, "
                    "or leave it empty to have it detected.")
        return ""

    def show_problem(self, problem: str) -> None:
        self.problem_label.setText(problem)
        self.problem_label.setVisible(bool(problem))

    def open_get_voice_models(self) -> VoiceModelsDialog:
        """The Hub's speech models and voices; Use fills this page's field (saved with the settings)."""
        from app.models.voice_dialog import VoiceModelsDialog

        dialog = VoiceModelsDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.chosen.connect(self._on_voice_model_chosen)
        dialog.show()
        return dialog

    def _on_voice_model_chosen(self, kind: str, path: str) -> None:
        (self.model_edit if kind == "speech to text" else self.voice_edit).setText(path)
        self.show_problem(self.problem())

    def _on_choose_voice(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a Piper voice", "", "Piper voices (*.onnx)")
        if path:
            self.voice_edit.setText(path)

    def _on_choose_model(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Choose a faster-whisper model folder")
        if path:
            self.model_edit.setText(path)
