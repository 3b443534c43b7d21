"""A tab's own chat settings beside its conversation: system prompt, temperature, top-p, max tokens, presets.

The panel holds only what the user changed in this tab; everything else follows
the window's defaults (Settings), so a default changed later still reaches a
tab whose panel never touched it. `effective(sampling, prompt)` is what the next
Submit uses. "Save as default" writes the shown values to the settings; a preset
is a named set of the same four values, kept in the settings too. The Think
control of reasoning models goes in `think_slot`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.bridge import SamplingParams
from app.settings.store import Settings

Defaults = Callable[[], tuple[SamplingParams, str]]  # sampling, system prompt
FIELDS = ("system_prompt", "temperature", "top_p", "max_new_tokens")
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
        self.top_p = self._spin(QDoubleSpinBox(self), "Top-p", 0.0, 1.0, 0.05)
        self.max_tokens = self._spin(QSpinBox(self), "Max tokens", 1, 131072, 64)
        self.temperature.valueChanged.connect(lambda value: self._on_edited("temperature", round(value, 2)))
        self.top_p.valueChanged.connect(lambda value: self._on_edited("top_p", round(value, 2)))
        self.max_tokens.valueChanged.connect(lambda value: self._on_edited("max_new_tokens", int(value)))
        self.save_default_button = self._button("Save as default", "Use these settings for new chats", self.save_as_default)
        self.reset_button = self._button("Reset", "Back to the defaults in this chat", self.reset)
        self.think_slot = QVBoxLayout()  # the Think control of a reasoning model goes here
        form = QFormLayout()
        form.addRow("Temperature", self.temperature)
        form.addRow("Top-p", self.top_p)
        form.addRow("Max tokens", self.max_tokens)
        buttons = QHBoxLayout()
        buttons.addWidget(self.reset_button)
        buttons.addStretch(1)
        buttons.addWidget(self.save_default_button)
        layout = QVBoxLayout(self)
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
        sampling, prompt = self.effective(*self._defaults())
        return {"system_prompt": prompt, "temperature": sampling.temperature, "top_p": sampling.top_p,
                "max_new_tokens": sampling.max_new_tokens}

    def show_values(self) -> None:
        """Fill the fields from the defaults and this tab's changes (the defaults may have changed since)."""
        values = self.values()
        self._showing = True
        try:
            if self.system_prompt.toPlainText() != values["system_prompt"]:
                self.system_prompt.setPlainText(values["system_prompt"])
            self.temperature.setValue(values["temperature"])
            self.top_p.setValue(values["top_p"])
            self.max_tokens.setValue(values["max_new_tokens"])
            self._fill_presets()
        finally:
            self._showing = False

    def set_values(self, values: dict[str, Any]) -> None:
        """Change several fields as the user would (a preset)."""
        defaults = dict(zip(FIELDS, (self.values_of_defaults()[key] for key in FIELDS)))
        for key in FIELDS:
            if key in values:
                self._set_override(key, values[key], defaults[key])
        self.show_values()
        self.changed.emit()

    def values_of_defaults(self) -> dict[str, Any]:
        sampling, prompt = self._defaults()
        return {"system_prompt": prompt, "temperature": sampling.temperature, "top_p": sampling.top_p,
                "max_new_tokens": sampling.max_new_tokens}

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

    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        self.show_values()

    # ------------------------------------------------------------ defaults and presets (in the settings)

    def save_as_default(self) -> None:
        if self._settings is None:
            return
        values = self.values()
        self._settings.set("chat.system_prompt", values["system_prompt"])
        for key in FIELDS[1:]:
            self._settings.set(f"sampling.{key}", values[key])
        self._settings.save()
        self.overrides.clear()
        self.defaults_saved.emit()  # the window takes the new defaults; this tab follows them again
        self.show_values()

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
