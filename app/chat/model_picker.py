"""The model picker in a tab's header: the library's models, each with its fit here, and the one this chat uses.

Choosing one emits `model_chosen(path)`; the window loads it beside the others (app/window/tab_models.py).
The library is looked for the first time the list is opened (`opening`), so a window that is never asked
costs no disk scan.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPixmap
from PySide6.QtWidgets import QComboBox, QWidget

from app.models.library import LibraryModel

PATH_ROLE = Qt.ItemDataRole.UserRole
FIT_COLORS = {"fits": "#2e7d32", "tight": "#b26a00", "does not fit": "#c62828", "": "#9e9e9e"}
MAX_CHARS = 40


def _dot(color: str, size: int = 10) -> QIcon:
    pixmap = QPixmap(size, size)
    pixmap.fill(QColor(color))
    return QIcon(pixmap)


def display_name(path: str) -> str:
    """A model's name from its path alone (before the library is read): the file without .gguf, or the folder."""
    name = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return name[:-5] if name.lower().endswith(".gguf") else name


class ModelPicker(QComboBox):
    """A compact list: "name — fits · loaded"; the tooltip says what it needs."""

    model_chosen = Signal(str)  # path
    opening = Signal()  # the list is about to show

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Model of this chat")
        self.setToolTip("The model this chat talks to; another one loads beside the others")
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.setMinimumContentsLength(16)
        self._models: list[LibraryModel] = []
        self._loaded: set[str] = set()
        self._path = ""
        self._filling = False
        self.activated.connect(self._on_activated)

    @property
    def path(self) -> str:
        return self._path

    def set_models(self, models: Sequence[LibraryModel], loaded: Collection[str] = ()) -> None:
        self._models, self._loaded = list(models), set(loaded)
        self._fill()

    def set_path(self, path: str) -> None:
        """Show `path` as this chat's model (it is offered even when the library does not list it)."""
        self._path = path
        self._fill()

    def item_texts(self) -> list[str]:
        return [self.itemText(i) for i in range(self.count())]

    def showPopup(self) -> None:  # noqa: N802 - Qt override
        self.opening.emit()
        super().showPopup()

    def _fill(self) -> None:
        self._filling = True
        try:
            self.clear()
            known = {model.path for model in self._models}
            models = list(self._models)
            if self._path and self._path not in known:
                models.insert(0, LibraryModel(self._path, display_name(self._path)))
            for model in models:
                name = model.name if len(model.name) <= MAX_CHARS else model.name[: MAX_CHARS - 1] + "…"
                notes = [note for note in (model.level, "loaded" if model.path in self._loaded else "") if note]
                self.addItem(_dot(FIT_COLORS.get(model.level, FIT_COLORS[""])),
                             name + (f" — {' · '.join(notes)}" if notes else ""), model.path)
                self.setItemData(self.count() - 1, f"{model.path}\n{model.message}".strip(), Qt.ItemDataRole.ToolTipRole)
            index = self.findData(self._path, PATH_ROLE)
            self.setCurrentIndex(max(index, 0))
        finally:
            self._filling = False

    def choose(self, path: str) -> None:
        """As if the user picked `path` in the list."""
        index = self.findData(path, PATH_ROLE)
        if index >= 0:
            self.setCurrentIndex(index)
            self._on_activated(index)

    def _on_activated(self, index: int) -> None:
        path = self.itemData(index, PATH_ROLE)
        if self._filling or not path:
            return  # the same model again is passed on: an unloaded one loads again
        self._path = path
        self.model_chosen.emit(path)
