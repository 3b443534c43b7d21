"""Pictures in a chat: a chip for each one the next message takes, and the thumbnails on a message card.

A file is a picture when its first bytes say PNG, JPEG or WebP (engine/images.py: never the name);
a file named like one that is not (a GIF, a broken download) gets a chip with the reason. A picture
pasted from the clipboard (a screenshot) is kept as PNG. Whether the tab's model can see is the
engine's word (ModelInfo.capabilities, "vision"): the chip says so when it cannot, and the tab
refuses to send rather than drop the picture.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QBuffer, QIODevice, QMimeData, Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

from engine.images import ImageError, image_part, sniff_mime
from engine.protocol import ImagePart

PICTURE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
CHIP_THUMBNAIL_PX = 28
CARD_THUMBNAIL_PX = 120
CANNOT_SEE = "this model cannot see pictures"


def is_picture_file(path: Path) -> bool:
    """Named like a picture, or its first bytes are one's (a screenshot saved without a suffix)."""
    if path.suffix.lower() in PICTURE_SUFFIXES:
        return True
    try:
        with open(path, "rb") as file:
            return sniff_mime(file.read(16)) is not None
    except OSError:
        return False


def read_picture(path: Path) -> ImagePart:
    """The file's bytes as a picture; an ImageError worded for the chip when it is not one."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ImageError(f"{path.name}: could not be read ({error.strerror or error}).") from error
    try:
        return image_part(data)
    except ImageError:
        raise ImageError(f"{path.name}: not a PNG, JPEG or WebP picture, so it cannot be attached.") from None


def clipboard_picture(mime: QMimeData) -> ImagePart | None:
    """A picture pasted as pixels (not as a file), kept as PNG; None when the clipboard holds none."""
    if not mime.hasImage():
        return None
    image = mime.imageData()
    if not isinstance(image, QImage) or image.isNull():
        return None
    buffer = QBuffer()  # its own bytes: a QByteArray handed in from Python may move under it
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")  # type: ignore[call-overload]  # PySide6 takes the format as str here, not bytes
    buffer.close()
    return ImagePart(bytes(buffer.data().data()), "image/png")


def thumbnail(image: ImagePart, height: int) -> QPixmap:
    """The picture scaled to `height` (never enlarged); an empty pixmap when Qt cannot read it."""
    loaded = QImage.fromData(image.data)
    if loaded.isNull():
        return QPixmap()
    if loaded.height() > height:
        loaded = loaded.scaledToHeight(height, Qt.TransformationMode.SmoothTransformation)
    return QPixmap.fromImage(loaded)


def describe(image: ImagePart) -> str:
    kind = image.mime.removeprefix("image/").upper()
    size = len(image.data)
    amount = f"{size / 1024:,.0f} KB" if size < 1 << 20 else f"{size / (1 << 20):,.1f} MB"
    return f"{kind}, {amount}"


def remove_button(chip: QWidget, name: str, remove: Callable[[], None]) -> QToolButton:
    """A chip's "×": it removes the attachment `name` (documents' and pictures' chips alike)."""
    button = QToolButton(chip)
    button.setText("×")
    button.setAutoRaise(True)
    button.setToolTip(f"Remove {name}")
    button.clicked.connect(remove)
    return button


class PictureChip(QFrame):
    """One picture the next message takes: its thumbnail, name and size, or why it cannot go."""

    remove_requested = Signal(int)

    def __init__(self, key: int, name: str, image: ImagePart | None, error: str = "",
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("pictureChip")
        self.key, self.name, self.image, self.error = key, name, image, error
        self.problem = ""  # the model's: it cannot see
        self.tokens: int | None = None  # the prompt tokens it takes with the tab's model, once counted
        self.counted_for: str | None = None  # the model path those tokens were asked for
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.preview = QLabel(self)
        if image is not None:
            self.preview.setPixmap(thumbnail(image, CHIP_THUMBNAIL_PX))
        self.preview.setVisible(image is not None)
        self.label = QLabel(self)
        close = remove_button(self, name, lambda: self.remove_requested.emit(self.key))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 2, 2, 2)
        layout.addWidget(self.preview)
        layout.addWidget(self.label)
        layout.addWidget(close)
        self.show_state("")

    def show_state(self, problem: str) -> None:
        """`problem`: why the tab's model will not take it ("" : it can see)."""
        self.problem = problem
        if self.error:
            self.label.setText(f"⚠ {self.error}")
            self.setToolTip(self.error)
        elif problem:
            self.label.setText(f"{self.name} · ⚠ {CANNOT_SEE}")
            self.setToolTip(f"{problem}. Remove the picture or choose a model that can see.")
        else:
            assert self.image is not None
            tokens = f" · {self.tokens:,} tokens" if self.tokens is not None else ""
            self.label.setText(f"{self.name} · {describe(self.image)}{tokens}")
            self.setToolTip("")


class Thumbnails(QWidget):
    """A message's pictures, side by side above its text."""

    def __init__(self, images: Sequence[ImagePart], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("messagePictures")
        self.images = tuple(images)
        self.labels: list[QLabel] = []
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 2, 0, 2)
        for number, image in enumerate(self.images, 1):
            label = QLabel(self)
            pixmap = thumbnail(image, CARD_THUMBNAIL_PX)
            if pixmap.isNull():
                label.setText(f"[picture {number}: {describe(image)}]")
            else:
                label.setPixmap(pixmap)
            label.setToolTip(f"Picture {number}: {describe(image)}")
            label.setAccessibleName(f"Picture {number}")
            row.addWidget(label)
            self.labels.append(label)
        row.addStretch(1)
