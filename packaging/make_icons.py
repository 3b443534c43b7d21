"""Render Hearth's icon from resources/hearth.svg into PNGs, a Windows .ico and a macOS .icns.

Run it after editing the SVG and commit what it writes:

    .venv/bin/python packaging/make_icons.py

Qt's own SVG renderer draws the PNGs, so no image library is needed. The .ico and
.icns containers are small enough to write by hand: both may embed PNG data
(Windows Vista and later, macOS 10.7 and later), which keeps this script to
"render, then wrap".
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

RESOURCES = Path(__file__).resolve().parents[1] / "resources"
SVG = RESOURCES / "hearth.svg"
PNG_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)  # .ico stops at 256
# OSType -> pixel size; the @2x types (ic11..ic14, ic10) reuse the larger renders.
ICNS_TYPES = (
    (b"icp4", 16), (b"icp5", 32), (b"icp6", 64), (b"ic07", 128), (b"ic08", 256),
    (b"ic09", 512), (b"ic10", 1024), (b"ic11", 32), (b"ic12", 64), (b"ic13", 256), (b"ic14", 512),
)


def render_image(svg: bytes, size: int) -> QImage:
    """The SVG drawn into a transparent size x size image."""
    renderer = QSvgRenderer(QByteArray(svg))
    if not renderer.isValid():
        raise ValueError(f"{SVG}: Qt cannot parse this SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter)
    painter.end()
    return image.convertToFormat(QImage.Format.Format_ARGB32)


def png_bytes(image: QImage) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):
        raise RuntimeError("Qt could not encode a PNG")
    buffer.close()
    return bytes(data.data())


def ico_bytes(pngs: dict[int, bytes]) -> bytes:
    """A Windows .ico whose every entry is PNG data (ICONDIR + ICONDIRENTRY records)."""
    sizes = sorted(pngs)
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = len(header) + 16 * len(sizes)
    entries = []
    for size in sizes:
        side = 0 if size >= 256 else size  # 0 means 256 in the one-byte fields
        entries.append(struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(pngs[size]), offset))
        offset += len(pngs[size])
    return header + b"".join(entries) + b"".join(pngs[size] for size in sizes)


def icns_bytes(elements: list[tuple[bytes, bytes]]) -> bytes:
    """A macOS .icns: 'icns' + total length, then (OSType, length, PNG data) per element."""
    body = b"".join(kind + struct.pack(">I", 8 + len(data)) + data for kind, data in elements)
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def build(resources: Path = RESOURCES) -> list[Path]:
    """Write every icon file under `resources`; returns the paths written."""
    svg = (resources / "hearth.svg").read_bytes()
    sizes = sorted(set(PNG_SIZES) | {size for _, size in ICNS_TYPES})
    pngs = {size: png_bytes(render_image(svg, size)) for size in sizes}
    written = []
    (resources / "icons").mkdir(exist_ok=True)
    for size in PNG_SIZES:
        written.append(_write(resources / "icons" / f"hearth-{size}.png", pngs[size]))
    written.append(_write(resources / "hearth.ico", ico_bytes({s: pngs[s] for s in ICO_SIZES})))
    written.append(_write(resources / "hearth.icns", icns_bytes([(k, pngs[s]) for k, s in ICNS_TYPES])))
    return written


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else RESOURCES
    for written_path in build(target):
        print(f"{written_path}  {written_path.stat().st_size} bytes")
