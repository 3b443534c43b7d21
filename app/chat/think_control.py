"""A chat's own Think setting: on / off or an effort (low / medium / high), and a thinking budget.

Offered only where the loaded model's chat template can do it, as the engine found from the
template (ModelInfo.capabilities): "thinking_switch" gives on / off, "reasoning_effort" gives
low / medium / high, and the budget comes with "reasoning" (a model that thinks at all). A model
with none of them shows nothing here. The choice belongs to the chat: `settings()` is what the
history stores with it, `restore()` puts it back, and a choice the current model cannot take is
kept for the model that can. Each turn sends `template_options()` (Submit.template_options) and
`reasoning_budget()` (SamplingParams.reasoning_budget).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QSpinBox, QWidget

SWITCH_CHOICES = ("on", "off")
EFFORT_CHOICES = ("low", "medium", "high")
THINK_KEY, BUDGET_KEY = "think", "reasoning_budget"  # the chat's stored settings
MAX_BUDGET = 65536
BUDGET_STEP = 128


def think_choices(capabilities: Iterable[str]) -> tuple[str, ...]:
    offered = set(capabilities)
    return (SWITCH_CHOICES if "thinking_switch" in offered else ()) + (
        EFFORT_CHOICES if "reasoning_effort" in offered else ())


def default_choice(capabilities: Iterable[str]) -> str | None:
    """What the templates do when asked nothing: Qwen3's thinks, gpt-oss's at medium effort."""
    choices = think_choices(capabilities)
    return None if not choices else "on" if "on" in choices else "medium"


def template_options(choice: str | None, capabilities: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """The chat template's variables for a choice, as (name, JSON text) pairs; () where nothing is offered."""
    offered = set(capabilities)
    if choice not in think_choices(offered):
        choice = default_choice(offered)
    if choice is None:
        return ()
    options: list[tuple[str, str]] = []
    if "thinking_switch" in offered:
        options.append(("enable_thinking", "false" if choice == "off" else "true"))
    if "reasoning_effort" in offered and choice in EFFORT_CHOICES:
        options.append(("reasoning_effort", json.dumps(choice)))
    return tuple(options)


class ThinkControl(QWidget):
    """A "Think: on" box and a budget box beside a chat's input; hidden where the model offers neither."""

    changed = Signal(dict)  # the chat's think settings (THINK_KEY, BUDGET_KEY), to be stored

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.capabilities: tuple[str, ...] = ()
        self.choice: str | None = None  # what the reader picked; None: the template's default
        self.budget: int | None = None  # thinking tokens; None: no budget
        self.choice_box = QComboBox(self)
        self.choice_box.setToolTip("Whether the model thinks before it answers, and how hard (this chat only)")
        self.choice_box.setAccessibleName("Thinking")
        self.choice_box.setAccessibleDescription(self.choice_box.toolTip())
        self.choice_box.activated.connect(self._on_choice_activated)
        self.budget_box = QSpinBox(self)
        self.budget_box.setRange(0, MAX_BUDGET)
        self.budget_box.setSingleStep(BUDGET_STEP)
        self.budget_box.setSpecialValueText("no thinking budget")
        self.budget_box.setPrefix("budget ")
        self.budget_box.setSuffix(" tokens")
        self.budget_box.setToolTip("At most this many thinking tokens, then the model answers (this chat only)")
        self.budget_box.setAccessibleName("Thinking budget")
        self.budget_box.setAccessibleDescription(self.budget_box.toolTip())
        self.budget_box.valueChanged.connect(self._on_budget_changed)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.choice_box)
        layout.addWidget(self.budget_box)
        self.set_capabilities(())

    # ------------------------------------------------------------ the model and the stored choice

    def set_capabilities(self, capabilities: Iterable[str]) -> None:
        """The loaded model's template capabilities (() while none is loaded): what is offered."""
        self.capabilities = tuple(capabilities)
        choices = think_choices(self.capabilities)
        self.choice_box.blockSignals(True)
        self.choice_box.clear()
        for choice in choices:
            self.choice_box.addItem(f"Think: {choice}", choice)
        self.choice_box.blockSignals(False)
        self._show_choice()
        self.choice_box.setVisible(bool(choices))
        self.setVisible(bool(choices) or "reasoning" in self.capabilities)

    def restore(self, settings: Mapping[str, Any]) -> None:
        """The chat's stored settings (other keys are ignored; odd values count as unset)."""
        choice, budget = settings.get(THINK_KEY), settings.get(BUDGET_KEY)
        self.choice = choice if choice in SWITCH_CHOICES + EFFORT_CHOICES else None
        self.budget = budget if isinstance(budget, int) and not isinstance(budget, bool) and budget > 0 else None
        self.budget_box.blockSignals(True)
        self.budget_box.setValue(min(self.budget or 0, MAX_BUDGET))
        self.budget_box.blockSignals(False)
        self._show_choice()

    def settings(self) -> dict[str, Any]:
        return {THINK_KEY: self.choice, BUDGET_KEY: self.budget}

    # ------------------------------------------------------------ what a turn sends

    def shown_choice(self) -> str | None:
        """The choice in effect with this model (the stored one where it can take it)."""
        return self.choice if self.choice in think_choices(self.capabilities) else default_choice(self.capabilities)

    def template_options(self) -> tuple[tuple[str, str], ...]:
        return template_options(self.choice, self.capabilities)

    def reasoning_budget(self) -> int | None:
        """The budget where it is offered and the model thinks at all in this chat."""
        offered = "reasoning" in self.capabilities or bool(think_choices(self.capabilities))
        return self.budget if offered and self.shown_choice() != "off" else None

    # ------------------------------------------------------------ internals

    def _show_choice(self) -> None:
        shown = self.shown_choice()
        index = self.choice_box.findData(shown) if shown is not None else -1
        if index >= 0:
            self.choice_box.setCurrentIndex(index)
        self.budget_box.setVisible(shown != "off")

    def _on_choice_activated(self, index: int) -> None:
        self.choice = self.choice_box.itemData(index)
        self._show_choice()
        self.changed.emit(self.settings())

    def _on_budget_changed(self, value: int) -> None:
        self.budget = value or None
        self.changed.emit(self.settings())
