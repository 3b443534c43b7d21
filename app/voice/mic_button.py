"""Dictation's widgets: the microphone button, the level meter under it, and the row that sets them beside the input.

Separate from DictationControl (dictation.py), which records, transcribes and decides when,
because this changes with how the microphone looks and is laid out in each state (idle,
recording, transcribing, no microphone), not with the rules of recording and transcribing. A spoken
conversation's wait (it will listen again once the answer has been spoken) is a look of its own too:
a dashed red outline and a tooltip that says so.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QToolButton, QVBoxLayout, QWidget

from app.voice.level_meter import LevelMeter
from app.voice.mic_icon import microphone_icon

RECORDING_STYLE = ('QToolButton[recording="true"] { background: rgba(211, 47, 47, 0.16); '
                   "border: 1px solid #d32f2f; border-radius: 4px; } "
                   'QToolButton[waiting="true"] { border: 2px dashed #d32f2f; border-radius: 4px; }')
WAITING_TIP = ("Listens again once the answer has been spoken, for your next message; click, Esc or Stop ends "
               "the conversation")
IDLE_TIP = ("Dictate: hold to talk and release to stop, or click to start and click again to stop "
            "(hold Ctrl+Space in the message box); Esc cancels")
TIPS = {"idle": IDLE_TIP, "recording": "Listening — release (or click) to stop; Esc cancels",
        "transcribing": "Writing down what you said…; Esc cancels"}


class MicWidgets:
    """`button`, `meter` (shown while recording) and `row`: the input with both beside it, what the tab lays out."""

    def __init__(self, chat_input: QWidget, parent: QWidget) -> None:
        self.state = "idle"  # idle, recording or transcribing
        self.button = QToolButton(parent)
        self.button.setObjectName("micButton")
        self.button.setAccessibleName("Dictate")
        self.button.setIconSize(self.button.iconSize() * 1.5)
        self.button.setStyleSheet(RECORDING_STYLE)
        self.meter = LevelMeter(parent)
        self.meter.setObjectName("micLevel")
        self.meter.setFixedSize(self.button.sizeHint().width(), 6)  # under the button: the input keeps its width
        policy = self.meter.sizePolicy()
        policy.setRetainSizeWhenHidden(True)  # and its height, whether or not the meter shows
        self.meter.setSizePolicy(policy)
        self.meter.setAccessibleName("Microphone level")
        self.row = QWidget(parent)
        beside = QVBoxLayout()
        beside.addWidget(self.button)
        beside.addWidget(self.meter)
        beside.addStretch(1)
        layout = QHBoxLayout(self.row)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(chat_input, 1)
        layout.addLayout(beside)

    def show_state(self, state: str, has_microphone: bool) -> None:
        """idle, recording or transcribing; without a microphone the tooltip keeps saying why there is none."""
        recording = state == "recording"
        self.state = state
        self.button.setIcon(microphone_icon(recording, self.button.iconSize().height()))
        self.button.setProperty("recording", recording)
        self.button.setProperty("waiting", False)
        self.button.setText({"idle": "", "recording": "", "transcribing": "…"}[state])
        self.button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon if state == "transcribing"
                                       else Qt.ToolButtonStyle.ToolButtonIconOnly)
        if has_microphone:
            self.button.setToolTip(TIPS[state])
        self.meter.setValue(0)
        self.meter.setVisible(recording)
        self.button.style().unpolish(self.button)  # the style sheet's [recording] look follows the property
        self.button.style().polish(self.button)

    def show_waiting(self, waiting: bool) -> None:
        """A spoken conversation waits for the answer to be spoken, then listens (False: back to the state's look)."""
        self.button.setProperty("waiting", waiting)
        self.button.setIcon(microphone_icon(waiting or self.state == "recording", self.button.iconSize().height()))
        if self.button.isEnabled():
            self.button.setToolTip(WAITING_TIP if waiting else TIPS[self.state])
        self.button.setAccessibleDescription("Will listen after the answer" if waiting else "")
        self.button.style().unpolish(self.button)
        self.button.style().polish(self.button)

    def show_available(self) -> None:
        self.button.setEnabled(True)

    def show_unavailable(self, problem: str) -> None:
        """No microphone (or none yet): the button is disabled and its tooltip says why."""
        self.button.setEnabled(False)
        self.button.setToolTip(problem)
