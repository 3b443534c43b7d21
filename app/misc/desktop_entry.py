"""Put Hearth in the desktop's application menu (freedesktop desktops: Linux and the BSDs).

`hearth --install-desktop-entry` writes `<data>/applications/hearth.desktop` and the
icon in the hicolor sizes under `<data>/icons/hicolor/`, where <data> is
$XDG_DATA_HOME or ~/.local/share; `--uninstall-desktop-entry` removes them. The
entry starts the `hearth` that is running this code (the venv's script, a bundle's
executable, or `python -m app` as a last resort). Windows and macOS need none of
this: there the executable or the .app carries its own icon.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import string
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import resources

logger = logging.getLogger(__name__)

DESKTOP_FILE_NAME = f"{resources.APP_ID}.desktop"  # QGuiApplication.setDesktopFileName("hearth")
ICON_NAME = resources.APP_ID
# X11 WM_CLASS's class part is QCoreApplication.applicationName(); the window sets "Hearth".
WM_CLASS = "Hearth"
# Characters that force an Exec argument into double quotes (Desktop Entry spec, "The Exec key").
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


@dataclass(frozen=True)
class DesktopEntryResult:
    """What an install or uninstall did, with a message to print for a person."""

    ok: bool
    message: str
    paths: tuple[Path, ...] = ()


def is_freedesktop() -> bool:
    """True where application menus read .desktop files (not Windows, not macOS)."""
    return not (sys.platform.startswith("win") or sys.platform == "darwin")


def data_home() -> Path:
    """$XDG_DATA_HOME, or ~/.local/share when it is unset or not absolute (as the spec says)."""
    value = os.environ.get("XDG_DATA_HOME", "").strip()
    if value and Path(value).is_absolute():
        return Path(value)
    return Path.home() / ".local" / "share"


def launch_command() -> list[str]:
    """The command that starts this Hearth: bundle executable, venv script, PATH, or python -m app."""
    if getattr(sys, "frozen", False):
        return [os.path.abspath(sys.executable)]
    # Not resolved: a venv's python is a symlink, and the target would lack Hearth's packages.
    python = os.path.abspath(sys.executable)
    beside = Path(python).with_name("hearth")
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("hearth")
    if found:
        return [os.path.abspath(found)]
    return [python, "-m", "app"]


def exec_value(argv: list[str]) -> str:
    """argv quoted for an Exec= line: double quotes where needed, % doubled, backslashes escaped."""
    quoted = []
    for arg in argv:
        arg = arg.replace("%", "%%")
        if any(char in _RESERVED for char in arg):
            arg = '"' + re.sub(r'(["`$\\])', r"\\\1", arg) + '"'
        quoted.append(arg.replace("\\", "\\\\"))  # the string-level escape, applied on top
    return " ".join(quoted)


def entry_text(argv: list[str] | None = None) -> str:
    """The .desktop file's content for `argv` (default: launch_command())."""
    argv = argv or launch_command()
    text = string.Template(resources.desktop_template()).substitute(
        exec=exec_value(argv), try_exec=argv[0], icon=ICON_NAME, wm_class=WM_CLASS
    )
    if argv[1:] == ["-m", "app"]:  # a source checkout: `-m app` only resolves from its root
        text += f"Path={Path(__file__).resolve().parents[1]}\n"
    return text


def entry_path(data_dir: Path | None = None) -> Path:
    return (data_dir or data_home()) / "applications" / DESKTOP_FILE_NAME


def icon_targets(data_dir: Path | None = None) -> dict[Path, Path]:
    """Installed icon path -> packaged source, for every hicolor size and the SVG."""
    hicolor = (data_dir or data_home()) / "icons" / "hicolor"
    targets = {hicolor / f"{size}x{size}" / "apps" / f"{ICON_NAME}.png": source
               for size, source in resources.icon_paths().items()}
    targets[hicolor / "scalable" / "apps" / f"{ICON_NAME}.svg"] = resources.svg_path()
    return targets


def is_installed(data_dir: Path | None = None) -> bool:
    """Whether a Hearth entry exists (so a first run need not offer it again)."""
    return entry_path(data_dir).is_file()


def install_desktop_entry(data_dir: Path | None = None) -> DesktopEntryResult:
    """Write the .desktop file and the icons; safe to run again (it overwrites)."""
    if not is_freedesktop():
        return DesktopEntryResult(True, "A desktop entry is not needed on Windows or macOS: "
                                        "the Hearth executable carries its own icon.")
    base = data_dir or data_home()
    written: list[Path] = []
    try:
        for target, source in icon_targets(base).items():
            written.append(_write_atomically(target, source.read_bytes()))
        written.append(_write_atomically(entry_path(base), entry_text().encode("utf-8")))
    except OSError as error:
        return DesktopEntryResult(False, f"Could not write {error.filename or base}: {error.strerror or error}. "
                                         f"Check that {base} is writable, or set XDG_DATA_HOME to a folder that is.",
                                  tuple(written))
    _refresh_caches(base)
    logger.info("desktop entry installed at %s", entry_path(base))
    return DesktopEntryResult(True, f"Hearth is now in your application menu ({entry_path(base)}).", tuple(written))


def uninstall_desktop_entry(data_dir: Path | None = None) -> DesktopEntryResult:
    """Remove what install_desktop_entry wrote; folders shared with other apps stay."""
    if not is_freedesktop():
        return DesktopEntryResult(True, "Nothing to remove: Windows and macOS use no desktop entry.")
    base = data_dir or data_home()
    removed: list[Path] = []
    try:
        for path in [entry_path(base), *icon_targets(base)]:
            if path.is_file():
                path.unlink()
                removed.append(path)
    except OSError as error:
        return DesktopEntryResult(False, f"Could not remove {error.filename}: {error.strerror or error}.",
                                  tuple(removed))
    if not removed:
        return DesktopEntryResult(True, f"No Hearth desktop entry was installed under {base}.")
    _refresh_caches(base)
    return DesktopEntryResult(True, f"Removed Hearth's desktop entry and icons ({len(removed)} files).",
                              tuple(removed))


def _write_atomically(target: Path, data: bytes) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_bytes(data)
    os.replace(partial, target)  # a menu never sees a half-written entry
    return target


def _refresh_caches(base: Path) -> None:
    """Tell menus and icon themes to look again; best effort, nothing depends on it."""
    hicolor = base / "icons" / "hicolor"
    if hicolor.is_dir():
        os.utime(hicolor)  # icon caches compare the theme folder's mtime
    tool = shutil.which("update-desktop-database")
    if tool is None:
        return
    try:
        subprocess.run([tool, "-q", str(base / "applications")], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as error:
        logger.debug("update-desktop-database failed: %s", error)
