"""The freedesktop entry: its fields, its icons, desktop-file-validate, quoting, uninstall, other OSes."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

import resources
from app.misc import desktop_entry

pytestmark = pytest.mark.skipif(not desktop_entry.is_freedesktop(), reason="desktop entries are a freedesktop thing")


def _read_entry(path: Path) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # keys are case-sensitive
    parser.read(path, encoding="utf-8")
    return dict(parser["Desktop Entry"])


def _validate(path: Path) -> str:
    tool = shutil.which("desktop-file-validate")
    if tool is None:
        pytest.skip("desktop-file-validate is missing: install the desktop-file-utils package")
    result = subprocess.run([tool, str(path)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "data home"  # a space, as real home folders sometimes have
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def test_install_writes_a_valid_entry_pointing_at_this_hearth(data_home: Path) -> None:
    result = desktop_entry.install_desktop_entry()
    entry = data_home / "applications" / "hearth.desktop"
    assert result.ok and entry in result.paths
    assert str(entry) in result.message
    fields = _read_entry(entry)
    assert {k: fields[k] for k in ("Type", "Name", "Icon", "Terminal", "StartupWMClass", "Categories")} == {
        "Type": "Application", "Name": "Hearth", "Icon": "hearth", "Terminal": "false",
        "StartupWMClass": "Hearth", "Categories": "Utility;"}
    command = desktop_entry.launch_command()
    assert fields["TryExec"] == command[0]
    assert Path(command[0]).is_file()
    assert command[-2:] == ["-m", "app"] or Path(command[0]).name == "hearth"
    assert _validate(entry).strip() == ""


def test_install_puts_every_icon_size_in_hicolor(data_home: Path) -> None:
    desktop_entry.install_desktop_entry()
    hicolor = data_home / "icons" / "hicolor"
    for size in resources.ICON_SIZES:
        installed = hicolor / f"{size}x{size}" / "apps" / "hearth.png"
        assert installed.read_bytes() == resources.icon_bytes(size)
        assert QImage(str(installed)).width() == size
    assert (hicolor / "scalable" / "apps" / "hearth.svg").read_bytes() == resources.svg_path().read_bytes()


def test_exec_quotes_paths_with_spaces_and_escapes_percent(data_home: Path) -> None:
    argv = ["/opt/My Apps/hearth 100%/bin/hearth", "--flag=a$b"]
    line = desktop_entry.exec_value(argv)
    assert line == '"/opt/My Apps/hearth 100%%/bin/hearth" "--flag=a\\\\$b"'
    data_home.mkdir()
    entry = data_home / "quoted.desktop"
    entry.write_text(desktop_entry.entry_text(argv), encoding="utf-8")
    assert _validate(entry).strip() == ""
    assert desktop_entry.exec_value(["/usr/bin/hearth"]) == "/usr/bin/hearth"


def test_a_bundle_entry_starts_the_bundle_executable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    executable = tmp_path / "Hearth" / "hearth"
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(executable))
    assert desktop_entry.launch_command() == [str(executable)]


def test_uninstall_removes_what_install_wrote(data_home: Path) -> None:
    installed = desktop_entry.install_desktop_entry().paths
    assert desktop_entry.is_installed()
    result = desktop_entry.uninstall_desktop_entry()
    assert result.ok and sorted(result.paths) == sorted(installed)
    assert not any(path.exists() for path in installed)
    assert not desktop_entry.is_installed()
    again = desktop_entry.uninstall_desktop_entry()
    assert again.ok and again.paths == () and "No Hearth desktop entry" in again.message


def test_a_read_only_data_folder_gives_a_clear_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not a folder"
    blocker.write_text("a file where the data folder should be")
    result = desktop_entry.install_desktop_entry(blocker)
    assert not result.ok
    assert result.message.startswith("Could not write ")
    assert "set XDG_DATA_HOME to a folder that is" in result.message


def test_relative_xdg_data_home_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", "relative/share")
    assert desktop_entry.data_home() == Path.home() / ".local" / "share"


def test_windows_and_macos_need_no_entry(monkeypatch: pytest.MonkeyPatch, data_home: Path) -> None:
    for platform in ("win32", "darwin"):
        monkeypatch.setattr(sys, "platform", platform)
        result = desktop_entry.install_desktop_entry()
        assert result.ok and result.paths == () and "not needed on Windows or macOS" in result.message
    assert not data_home.exists()
