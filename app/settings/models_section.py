"""The settings dialog's Several models section: how long idle models stay, the memory they share, and names.

Keep-alive (15 minutes by default, or forever), the memory budget of all loaded models together (0: what
the estimate says fits this machine, shown beside it), whether an API request may load a model by naming
it, aliases (name=model lines, for clients that hard-code a model name) and whether an unknown name gets
the model loaded last. `problem()` names an alias line that is not name=model; the dialog does not apply then.
"""

from __future__ import annotations

from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QPlainTextEdit,
                               QWidget)

from app.settings.store import Settings, parse_aliases
from engine.units import format_bytes

FOREVER_MINUTES = -1.0
LOAD_BY_NAME = (("when serving this computer only", "local"), ("always", "on"), ("never", "off"))


class ModelsSection(QGroupBox):
    def __init__(self, default_budget_bytes: int = 0, parent: QWidget | None = None) -> None:
        super().__init__("Several models", parent)
        self.keep_alive_spin = QDoubleSpinBox()
        self.keep_alive_spin.setRange(0, 24 * 60)
        self.keep_alive_spin.setDecimals(0)
        self.keep_alive_spin.setSuffix(" min")
        self.keep_alive_spin.setToolTip("0: unloaded as soon as its answer ends")
        self.forever_check = QCheckBox("forever")
        self.forever_check.setToolTip("Never unload a model for being idle (it can still be unloaded by hand)")
        self.forever_check.toggled.connect(lambda on: self.keep_alive_spin.setEnabled(not on))
        keep_row = QHBoxLayout()
        keep_row.addWidget(self.keep_alive_spin)
        keep_row.addWidget(self.forever_check)
        keep_row.addStretch(1)
        self.budget_spin = QDoubleSpinBox()
        self.budget_spin.setRange(0, 4096)
        self.budget_spin.setDecimals(1)
        self.budget_spin.setSuffix(" GiB")
        self.budget_spin.setSpecialValueText("what fits here")
        budget_row = QHBoxLayout()
        budget_row.addWidget(self.budget_spin)
        self.budget_hint = QLabel(f"(that is {format_bytes(default_budget_bytes)})" if default_budget_bytes else "")
        self.budget_hint.setProperty("role", "hint")
        budget_row.addWidget(self.budget_hint)
        budget_row.addStretch(1)
        self.load_by_name_combo = QComboBox()
        self.load_by_name_combo.setToolTip("An API request that names a model of the library loads it")
        for label, value in LOAD_BY_NAME:
            self.load_by_name_combo.addItem(label, value)
        self.unknown_default_check = QCheckBox("Answer unknown model names with the model loaded last")
        self.aliases_edit = QPlainTextEdit()
        self.aliases_edit.setPlaceholderText("gpt-4o=SmolLM2-135M-Instruct.Q4_1\none name=model a line")
        self.aliases_edit.setFixedHeight(self.aliases_edit.fontMetrics().lineSpacing() * 3 + 12)
        self.problem_label = QLabel()
        self.problem_label.setProperty("role", "error")
        self.problem_label.setWordWrap(True)
        self.problem_label.hide()
        form = QFormLayout(self)
        form.addRow("Keep idle models", keep_row)
        form.addRow("Memory budget", budget_row)
        form.addRow("Load models by name", self.load_by_name_combo)
        form.addRow("Aliases", self.aliases_edit)
        form.addRow(self.unknown_default_check)
        form.addRow(self.problem_label)

    def load(self, settings: Settings) -> None:
        minutes = settings.get("models.keep_alive_min")
        self.forever_check.setChecked(minutes < 0)
        self.keep_alive_spin.setValue(15.0 if minutes < 0 else minutes)
        self.budget_spin.setValue(settings.get("models.budget_gib"))
        self.load_by_name_combo.setCurrentIndex(self.load_by_name_combo.findData(settings.get("server.load_by_name")))
        self.unknown_default_check.setChecked(settings.get("server.unknown_model_is_default"))
        self.aliases_edit.setPlainText("\n".join(settings.get("server.aliases")))

    def alias_lines(self) -> list[str]:
        return [line.strip() for line in self.aliases_edit.toPlainText().splitlines() if line.strip()]

    def problem(self) -> str:
        _, bad = parse_aliases(self.alias_lines())
        return f"An alias is written name=model; this line is not: {bad[0]}" if bad else ""

    def show_problem(self, problem: str) -> None:
        self.problem_label.setText(problem)
        self.problem_label.setVisible(bool(problem))

    def collect(self, target: Settings) -> None:
        target.set("models.keep_alive_min", FOREVER_MINUTES if self.forever_check.isChecked()
                   else self.keep_alive_spin.value())
        target.set("models.budget_gib", self.budget_spin.value())
        target.set("server.load_by_name", self.load_by_name_combo.currentData())
        target.set("server.unknown_model_is_default", self.unknown_default_check.isChecked())
        target.set("server.aliases", self.alias_lines())
