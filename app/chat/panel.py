"""A tab's own chat settings beside its conversation: system prompt, sampling (temperature, top-k, top-p,
min-p, repeat penalty, seed, max tokens), presets.

The panel holds only what the user changed in this tab (`overrides`, stored with the
chat by app/history/sync.py and given back by `restore`); everything else follows
the window's defaults (Settings), so a default changed later still reaches a
tab whose panel never touched it. `effective(sampling, prompt)` is what the next
Submit uses. "Save as default" writes the shown values to the settings; a preset
is a named set of the same values, kept in the settings too. The Think
control of reasoning models goes in `think_slot`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.bridge import SamplingParams
from app.settings.store import Settings

Defaults = Callable[[], tuple[SamplingParams, str]]  # sampling, system prompt
FIELDS = ("system_prompt", "temperature", "top_k", "top_p", "min_p", "repeat_penalty", "seed", "max_new_tokens")
RANDOM_SEED = -1  # the seed box's "random": SamplingParams.seed None
NO_PRESET = "(no preset)"
PANEL_WIDTH = 280


class ChatPanel(QWidget):
    """Per-tab overrides of the defaults; `changed` when one of them did, `defaults_saved` after Save as default."""

    changed = Signal()
    defaults_saved = Signal()

    def __init__(self, defaults: Defaults, settings: Settings | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatPanel")
        self.setFixedWidth(PANEL_WIDTH)
        self._defaults, self._settings = defaults, settings
        self.overrides: dict[str, Any] = {}
        self._showing = False  # filling the fields: their change signals are not the user's
        self._build()
        self.show_values()

    def _build(self) -> None:
        self.preset = QComboBox(self)
        self.preset.setAccessibleName("Preset")
        self.preset.activated.connect(lambda _index: self.apply_preset(self.preset.currentText()))
        self.save_preset_button = self._button("Save as preset…", "Name these settings as a preset", self.ask_preset_name)
        self.system_prompt = QPlainTextEdit(self)
        self.system_prompt.setAccessibleName("System prompt")
        self.system_prompt.setTabChangesFocus(True)
        self.system_prompt.setMaximumHeight(self.system_prompt.fontMetrics().lineSpacing() * 7 + 12)
        self.system_prompt.textChanged.connect(lambda: self._on_edited("system_prompt", self.system_prompt.toPlainText()))
        self.temperature = self._spin(QDoubleSpinBox(self), "Temperature", 0.0, 2.0, 0.05)
        self.top_k = self._spin(QSpinBox(self), "Top-k", 0, 1000, 5)
        self.top_k.setSpecialValueText("off")
        self.top_p = self._spin(QDoubleSpinBox(self), "Top-p", 0.0, 1.0, 0.05)
        self.min_p = self._spin(QDoubleSpinBox(self), "Min-p", 0.0, 1.0, 0.01)
        self.repeat_penalty = self._spin(QDoubleSpinBox(self), "Repeat penalty", 0.5, 2.0, 0.05)
        self.seed = self._spin(QSpinBox(self), "Seed", RANDOM_SEED, 2**31 - 1, 1)
        self.seed.setSpecialValueText("random")
        self.max_tokens = self._spin(QSpinBox(self), "Max tokens", 1, 131072, 64)
        for key, box in self._boxes().items():
            box.valueChanged.connect(lambda value, key=key: self._on_edited(key, _field_value(key, value)))
        self.save_default_button = self._button("Save as default", "Use these settings for new chats", self.save_as_default)
        self.reset_button = self._button("Reset", "Back to the defaults in this chat", self.reset)
        self.think_slot = QVBoxLayout()  # the Think control of a reasoning model goes here
        form = QFormLayout()
        for box in self._boxes().values():
            form.addRow(box.accessibleName(), box)
        buttons = QHBoxLayout()
        buttons.addWidget(self.reset_button)
        buttons.addStretch(1)
        buttons.addWidget(self.save_default_button)
        content = QWidget()
        layout = self.column = QVBoxLayout(content)  # what the panel shows, one under the other
        layout.setContentsMargins(8, 8, 12, 8)
        title = QLabel("This chat")
        title.setObjectName("messageRole")
        for widget in (title, self.preset):
            layout.addWidget(widget)
        layout.addWidget(self.save_preset_button)
        layout.addWidget(QLabel("System prompt"))
        layout.addWidget(self.system_prompt)
        for row in (form, self.think_slot, buttons):
            layout.addLayout(row)
        layout.addStretch(1)
        scroll = QScrollArea(self)  # a short window (1280x720) scrolls the panel rather than grow past the screen
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(content)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)

    def _boxes(self) -> dict[str, QSpinBox | QDoubleSpinBox]:
        """The sampling fields' boxes, by SamplingParams field, in the order shown."""
        return {"temperature": self.temperature, "top_k": self.top_k, "top_p": self.top_p, "min_p": self.min_p,
                "repeat_penalty": self.repeat_penalty, "seed": self.seed, "max_new_tokens": self.max_tokens}

    def _spin(self, spin: QSpinBox | QDoubleSpinBox, name: str, low: float, high: float, step: float) -> Any:
        spin.setRange(low, high)  # type: ignore[arg-type]
        spin.setSingleStep(step)  # type: ignore[arg-type]
        spin.setAccessibleName(name)
        spin.setKeyboardTracking(False)
        return spin

    def _button(self, text: str, tip: str, slot: Callable[[], object]) -> QPushButton:
        button = QPushButton(text, self)
        button.setToolTip(tip)
        button.setAccessibleName(text.rstrip("…"))
        button.clicked.connect(lambda _checked=False: slot())
        return button

    # ------------------------------------------------------------ values

    def effective(self, sampling: SamplingParams, system_prompt: str) -> tuple[SamplingParams, str]:
        """The defaults with this tab's changes on top: what the next Submit sends."""
        changes = {key: value for key, value in self.overrides.items() if key != "system_prompt"}
        return replace(sampling, **changes), self.overrides.get("system_prompt", system_prompt)

    def values(self) -> dict[str, Any]:
        """What this chat uses now, by FIELDS name (seed None: random)."""
        return _as_fields(*self.effective(*self._defaults()))

    def show_values(self) -> None:
        """Fill the fields from the defaults and this tab's changes (the defaults may have changed since)."""
        values = self.values()
        self._showing = True
        try:
            if self.system_prompt.toPlainText() != values["system_prompt"]:
                self.system_prompt.setPlainText(values["system_prompt"])
            for key, box in self._boxes().items():
                box.setValue(RANDOM_SEED if values[key] is None else values[key])
            self._fill_presets()
        finally:
            self._showing = False

    def restore(self, overrides: dict[str, Any]) -> None:
        """The changes a stored chat was saved with (not the user's doing now: no `changed`)."""
        self.overrides = {key: value for key, value in overrides.items() if key in FIELDS}
        self.show_values()

    def set_values(self, values: dict[str, Any]) -> None:
        """Change several fields as the user would (a preset)."""
        defaults = dict(zip(FIELDS, (self.values_of_defaults()[key] for key in FIELDS)))
        for key in FIELDS:
            if key in values:
                self._set_override(key, values[key], defaults[key])
        self.show_values()
        self.changed.emit()

    def values_of_defaults(self) -> dict[str, Any]:
        return _as_fields(*self._defaults())

    def _on_edited(self, key: str, value: Any) -> None:
        if self._showing:
            return
        self._set_override(key, value, self.values_of_defaults()[key])
        self.changed.emit()

    def _set_override(self, key: str, value: Any, default: Any) -> None:
        if value == default:
            self.overrides.pop(key, None)
        else:
            self.overrides[key] = value

    def reset(self) -> None:
        self.overrides.clear()
        self.show_values()
        self.changed.emit()

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self.show_values()

    # ------------------------------------------------------------ defaults and presets (in the settings)

    def save_as_default(self) -> None:
        if self._settings is None:
            return
        values = self.values()
        self._settings.set("chat.system_prompt", values["system_prompt"])
        for key in FIELDS[1:]:
            self._settings.set(f"sampling.{key}", RANDOM_SEED if values[key] is None else values[key])
        self._settings.save()
        self.overrides.clear()
        self.defaults_saved.emit()  # the window takes the new defaults; this tab follows them again
        self.show_values()
        self.changed.emit()  # its own changes are gone: the stored chat follows the defaults too

    def presets(self) -> dict[str, dict[str, Any]]:
        return dict(self._settings.get("chat.presets")) if self._settings is not None else {}

    def save_preset(self, name: str) -> None:
        name = " ".join(name.split())
        if not name or self._settings is None:
            return
        presets = self.presets()
        presets[name] = self.values()
        self._settings.set("chat.presets", presets)
        self._settings.save()
        self._fill_presets(name)

    def apply_preset(self, name: str) -> None:
        if name in self.presets():
            self.set_values(self.presets()[name])
            self._fill_presets(name)

    def ask_preset_name(self) -> None:
        name, ok = QInputDialog.getText(self, "Save preset", "Name:", text=self.preset.currentText().replace(NO_PRESET, ""))
        if ok:
            self.save_preset(name)

    def _fill_presets(self, current: str | None = None) -> None:
        current = current if current is not None else self.preset.currentText()
        self.preset.blockSignals(True)
        self.preset.clear()
        self.preset.addItems([NO_PRESET, *sorted(self.presets())])
        self.preset.setCurrentText(current if current in self.presets() else NO_PRESET)
        self.preset.blockSignals(False)


def _as_fields(sampling: SamplingParams, system_prompt: str) -> dict[str, Any]:
    return {"system_prompt": system_prompt, **{key: getattr(sampling, key) for key in FIELDS[1:]}}


def _field_value(key: str, value: float) -> Any:
    """A box's value as SamplingParams holds it: whole numbers as int, the seed's "random" as None."""
    if key == "seed":
        return None if value == RANDOM_SEED else int(value)
    return int(value) if key in ("top_k", "max_new_tokens") else round(value, 2)
