"""LaTeX environments mathtext cannot draw (matrix, pmatrix, bmatrix, cases, align…), drawn through MathML.

ziamath turns the LaTeX into MathML (latex2mathml) and lays it out as SVG whose glyphs are paths
from its own math font: no TeX install, no browser engine, no system fonts. QtSvg then paints the
SVG at the pixel size the message needs, so a formula is as sharp at 20 pt on a HiDPI screen as at
11 pt, and in the text's own colour on the message's background, light or dark. Runs on the math
drawing thread (app/chat/math_images.py): QSvgRenderer and QPainter on a QImage need no GUI thread.
"""

from __future__ import annotations

import math
import re

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF, Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ENVIRONMENT = re.compile(r"\\begin\{")
POINTS_PER_INCH = 72.0


def has_environment(source: str) -> bool:
    """Whether a formula holds a \\begin{…} environment (mathtext has none)."""
    return bool(ENVIRONMENT.search(source))


def svg_of(source: str, color: str, points: float) -> str | None:
    """The formula as SVG, one unit a point; None where ziamath is missing or cannot parse it."""
    try:
        import ziamath
    except ImportError:
        return None
    ziamath.config.svg2 = False  # plain paths: QtSvg (SVG Tiny) draws neither <symbol> nor a bare href
    try:
        return str(ziamath.Latex(source, size=points, color=color).svg())
    except Exception:  # noqa: BLE001 - latex2mathml and ziamath raise many kinds on TeX they do not know
        return None


def draw_svg_png(source: str, color: str, points: float, dpi: int) -> bytes | None:
    """PNG bytes of the formula drawn at `dpi` (transparent background); None where it cannot be drawn."""
    svg = svg_of(source, color, points)
    if svg is None:
        return None
    renderer = QSvgRenderer(QByteArray(svg.encode()))
    box = renderer.viewBoxF()
    if not renderer.isValid() or box.isEmpty():
        return None
    scale = dpi / POINTS_PER_INCH
    width, height = math.ceil(box.width() * scale), math.ceil(box.height() * scale)
    image = QImage(width, height, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter, QRectF(0, 0, width, height))
    painter.end()
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")  # type: ignore[call-overload]  # the stubs want bytes, PySide wants str
    return bytes(buffer.data().data())
