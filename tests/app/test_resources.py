"""The packaged icon, .ico, .icns, style sheet and desktop template: present, valid, and in step with the SVG."""

from __future__ import annotations

import fnmatch
import importlib.util
import struct
from pathlib import Path
from types import ModuleType

import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

import resources

ROOT = Path(__file__).resolve().parents[2]


def _make_icons() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_icons", ROOT / "packaging" / "make_icons.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _png_size(data: bytes) -> tuple[int, int]:
    image = QImage.fromData(data, "PNG")
    assert not image.isNull(), "an embedded image is not a PNG Qt can read"
    return image.width(), image.height()


@pytest.mark.parametrize("size", resources.ICON_SIZES)
def test_each_png_has_its_size_a_transparent_corner_and_an_opaque_flame(size: int) -> None:
    image = QImage(str(resources.icon_path(size)))
    assert (image.width(), image.height()) == (size, size)
    assert image.pixelColor(0, 0).alpha() == 0
    centre = image.pixelColor(size // 2, size // 2)
    assert centre.alpha() == 255
    assert centre.red() > centre.blue() + 80, "the centre is the warm flame"


def test_the_pngs_are_rendered_from_the_current_svg() -> None:
    make_icons = _make_icons()
    svg = resources.svg_path().read_bytes()
    for size in (16, 64):
        fresh = make_icons.render_image(svg, size)
        stored = QImage(str(resources.icon_path(size))).convertToFormat(fresh.format())
        worst = max(abs(a - b) for a, b in zip(fresh.constBits().tobytes(), stored.constBits().tobytes()))
        assert worst <= 8, f"resources/icons/hearth-{size}.png is stale: run packaging/make_icons.py"


def test_ico_holds_one_png_per_size_up_to_256() -> None:
    data = resources.ico_path().read_bytes()
    reserved, kind, count = struct.unpack_from("<HHH", data)
    assert (reserved, kind, count) == (0, 1, 7)
    sizes = []
    for index in range(count):
        width, height, _, _, planes, bits, length, offset = struct.unpack_from("<BBBBHHII", data, 6 + 16 * index)
        assert (planes, bits) == (1, 32)
        side = width or 256
        assert _png_size(data[offset:offset + length]) == (side, height or 256)
        sizes.append(side)
    assert sizes == [16, 24, 32, 48, 64, 128, 256]


def test_icns_holds_the_retina_and_plain_sizes() -> None:
    data = resources.icns_path().read_bytes()
    assert data[:4] == b"icns"
    assert struct.unpack_from(">I", data, 4)[0] == len(data)
    found = {}
    offset = 8
    while offset < len(data):
        kind, length = data[offset:offset + 4], struct.unpack_from(">I", data, offset + 4)[0]
        found[kind] = _png_size(data[offset + 8:offset + length])[0]
        offset += length
    assert offset == len(data)
    assert found == {b"icp4": 16, b"icp5": 32, b"icp6": 64, b"ic07": 128, b"ic08": 256, b"ic09": 512,
                     b"ic10": 1024, b"ic11": 32, b"ic12": 64, b"ic13": 256, b"ic14": 512}


def test_app_icon_offers_every_size(qapp) -> None:
    sizes = [(s.width(), s.height()) for s in resources.app_icon().availableSizes()]
    assert sizes == [(size, size) for size in resources.ICON_SIZES]


def test_style_sheet_parses_and_styles_the_opt_in_widgets(qtbot, qtlog) -> None:
    sheet = resources.stylesheet()
    assert "palette(" in sheet
    container = QWidget()
    qtbot.addWidget(container)
    layout = QVBoxLayout(container)
    send = QPushButton("Send")
    send.setProperty("accent", True)
    box = QPlainTextEdit()
    box.setObjectName("chatInput")
    for widget in (send, box, QLabel("hint")):
        layout.addWidget(widget)
    container.setStyleSheet(sheet)
    for widget in (container, send, box):
        widget.ensurePolished()
    assert send.palette().button().color().name() == "#c4490f"
    assert [m.message for m in qtlog.records if "parse" in m.message.lower()] == []


def test_desktop_template_has_the_placeholders() -> None:
    template = resources.desktop_template()
    assert template.startswith("[Desktop Entry]\n")
    for placeholder in ("${exec}", "${try_exec}", "${icon}", "${wm_class}"):
        assert placeholder in template


def test_unknown_names_fail_with_a_clear_message() -> None:
    with pytest.raises(ValueError, match="no 20px icon; the sizes are 16, 24"):
        resources.icon_path(20)
    with pytest.raises(FileNotFoundError, match="'nothing.png' is missing"):
        resources.resource_path("nothing.png")


def test_every_resource_file_is_declared_as_package_data() -> None:
    """A file that no pattern covers would be missing from the wheel."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["resources"]
    folder = ROOT / "resources"
    files = [p.relative_to(folder).as_posix() for p in folder.rglob("*")
             if p.is_file() and p.suffix != ".pyc" and p.name != "__init__.py" and "__pycache__" not in p.parts]
    assert len(files) >= 13
    assert [f for f in files if not any(fnmatch.fnmatch(f, pattern) for pattern in patterns)] == []


def test_make_icons_writes_every_file_into_a_given_folder(tmp_path: Path) -> None:
    (tmp_path / "hearth.svg").write_bytes(resources.svg_path().read_bytes())
    written = _make_icons().build(tmp_path)
    assert sorted(p.name for p in written) == sorted(
        [f"hearth-{s}.png" for s in resources.ICON_SIZES] + ["hearth.ico", "hearth.icns"])
    assert QImage(str(tmp_path / "icons" / "hearth-512.png")).width() == 512
    assert (tmp_path / "hearth.icns").read_bytes()[:4] == b"icns"
