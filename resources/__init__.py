"""Hearth's icons, style sheet and desktop-entry template, found through importlib.resources.

The same calls work from a source checkout, an editable install, a wheel and a
PyInstaller bundle (which unpacks package data next to the frozen package).
Nothing here imports Qt at import time; only `app_icon()` needs QtGui.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
from importlib import resources as _resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtGui import QIcon

APP_ID = "hearth"  # the desktop file's name, the icon's name and the WM class
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)

# Only a zipped install needs files extracted; they live until the process exits.
_extracted = contextlib.ExitStack()
atexit.register(_extracted.close)


@functools.cache
def resource_path(name: str) -> Path:
    """A real file path for the packaged resource `name` ('icons/hearth-16.png')."""
    traversable = _resources.files(__name__).joinpath(*name.split("/"))
    if not traversable.is_file():
        raise FileNotFoundError(f"Hearth's resource {name!r} is missing from {_resources.files(__name__)}")
    if isinstance(traversable, Path):
        return traversable
    return _extracted.enter_context(_resources.as_file(traversable))


def icon_path(size: int) -> Path:
    """The PNG of the app icon at `size` x `size` pixels (one of ICON_SIZES)."""
    if size not in ICON_SIZES:
        raise ValueError(f"no {size}px icon; the sizes are {', '.join(map(str, ICON_SIZES))}")
    return resource_path(f"icons/{APP_ID}-{size}.png")


def icon_bytes(size: int) -> bytes:
    return icon_path(size).read_bytes()


def icon_paths() -> dict[int, Path]:
    """Every PNG size of the app icon, smallest first."""
    return {size: icon_path(size) for size in ICON_SIZES}


def svg_path() -> Path:
    return resource_path(f"{APP_ID}.svg")


def ico_path() -> Path:
    """The Windows icon (PNG entries 16..256 px)."""
    return resource_path(f"{APP_ID}.ico")


def icns_path() -> Path:
    """The macOS icon (PNG entries 16..1024 px)."""
    return resource_path(f"{APP_ID}.icns")


def stylesheet() -> str:
    """The application's Qt style sheet; it uses palette() colours, so it follows light and dark."""
    return resource_path("style.qss").read_text(encoding="utf-8")


def desktop_template() -> str:
    """The freedesktop entry with ${exec}, ${try_exec}, ${icon} and ${wm_class} to fill in."""
    return resource_path(f"{APP_ID}.desktop").read_text(encoding="utf-8")


def app_icon() -> QIcon:
    """The window icon with every PNG size, so Qt never has to scale a large one down."""
    from PySide6.QtGui import QIcon

    icon = QIcon()
    for path in icon_paths().values():
        icon.addFile(str(path))
    return icon
