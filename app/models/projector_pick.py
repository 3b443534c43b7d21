"""Get models' vision projector pick: where a GGUF's folder has several mmproj files (F16, F32, Q8_0 ...), a box
to choose the one fetched with it.

The most precise comes first and is fetched unless another is picked (engine/hub/listing.py: F16, BF16, F32,
Q8_0, then any). The pick changes what is downloaded and the chosen row's verdict (FitReport.refit), and,
once the model is used, is kept as its projector in Settings (as Settings' own Vision projector row keeps one),
so the file loaded is the one picked even where another mmproj sits beside it.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

from engine.hub.listing import HubFile, ModelChoice, projectors_for
from engine.images import projector_beside
from engine.units import format_bytes


class ProjectorPick(QWidget):
    """"Vision projector: [mmproj-F16.gguf, 1.2 GiB ▾]", shown only for a choice whose folder has more than one."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.box = QComboBox(self)
        self.box.setToolTip("The vision projector (mmproj GGUF) downloaded with the model: the first is the most "
                            "precise; a smaller one (Q8_0) takes less memory, F32 more.")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("Vision projector:", self))
        layout.addWidget(self.box, 1)
        self._options: tuple[HubFile, ...] = ()
        self._for = ""
        self.box.currentIndexChanged.connect(lambda _index: self.changed.emit())
        self.hide()

    def show_for(self, choice: ModelChoice | None, files: tuple[HubFile, ...]) -> None:
        """The projectors of `choice`'s folder (its pick kept while the same choice stays selected)."""
        key = choice.key if choice is not None and choice.kind == "gguf" else ""
        if key == self._for:
            return
        self._for = key
        self._options = projectors_for(key, files) if key else ()
        self.box.blockSignals(True)
        self.box.clear()
        for file in self._options:
            self.box.addItem(f"{PurePosixPath(file.path).name} ({format_bytes(file.size)})")
        self.box.blockSignals(False)
        self.setVisible(len(self._options) > 1)

    def applied(self, choice: ModelChoice) -> ModelChoice:
        """`choice` with the picked projector (as it is where nothing else was picked)."""
        index = self.box.currentIndex()
        if choice.key != self._for or not 0 < index < len(self._options):
            return choice
        return choice.with_projector(self._options[index])


def kept_projector(model_path: str, choice: ModelChoice) -> str:
    """The projector file to keep in Settings for a downloaded model: the one fetched with it, where Automatic (an
    mmproj beside the model, by name) would load another; "" where Automatic finds it."""
    if choice.projector is None:
        return ""
    name = PurePosixPath(choice.projector.path).name
    return "" if projector_beside(model_path) == name else str(Path(model_path).parent / name)
