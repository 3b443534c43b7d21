"""Small builders for the settings form: combos with data, spin boxes, and combo items disabled with a reason."""

from __future__ import annotations

from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QSpinBox


def combo(pairs: list[tuple[str, str]]) -> QComboBox:
    """(label, value) items; `currentData()` is the value."""
    box = QComboBox()
    for label, value in pairs:
        box.addItem(label, value)
    return box


def select(box: QComboBox, value: object) -> None:
    index = box.findData(value)
    if index >= 0:
        box.setCurrentIndex(index)


def spin(low: int, high: int, value: int = 0, special: str = "") -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    box.setSpecialValueText(special)
    return box


def double_spin(low: float, high: float, step: float) -> QDoubleSpinBox:
    box = QDoubleSpinBox()
    box.setRange(low, high)
    box.setSingleStep(step)
    box.setDecimals(2)
    return box


def _item(box: QComboBox, index: int) -> QStandardItem | None:
    model = box.model()
    return model.item(index) if isinstance(model, QStandardItemModel) else None


def set_item_enabled(box: QComboBox, index: int, enabled: bool, reason: str = "") -> None:
    """A disabled choice stays visible; its tooltip says why it cannot be chosen."""
    item = _item(box, index)
    if item is not None:
        item.setEnabled(enabled)
        item.setToolTip("" if enabled else reason)


def item_enabled(box: QComboBox, index: int) -> bool:
    item = _item(box, index)
    return item is None or item.isEnabled()
