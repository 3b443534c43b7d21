"""Finished checks on disk: one JSON file each under the user data folder, and the exports.

A check is saved only once it has finished, written to a temporary file and
renamed, so a cancelled or crashed run never leaves half a result to open.
Qt-free: the worker thread saves, the dialog lists and opens.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from engine.quantcheck.report import Report, write_atomically

DATA_DIR_ENV = "HEARTH_DATA_DIR"  # the same folder the chat history uses
FOLDER_NAME = "quantization-checks"


@dataclass(frozen=True)
class SavedCheck:
    path: Path
    report: Report

    @property
    def title(self) -> str:
        names = ", ".join(Path(c.path).name for c in self.report.candidates)
        return f"{self.report.created.replace('T', ' ')}: {Path(self.report.reference.path).name} vs {names}"


def checks_folder() -> Path:
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override) / FOLDER_NAME
    import platformdirs

    return platformdirs.user_data_path("Hearth", appauthor=False) / FOLDER_NAME


def save(report: Report, folder: Path | None = None) -> SavedCheck:
    target_folder = folder or checks_folder()
    stem = re.sub(r"[^0-9A-Za-z_.-]+", "-", f"{report.created}-{Path(report.reference.path).stem}")[:120]
    target = _free_name(target_folder, stem)
    write_atomically(target, json.dumps(report.to_saved(), indent=1))
    return SavedCheck(target, report)


def saved_checks(folder: Path | None = None) -> list[SavedCheck]:
    """Every readable saved check, newest first; an unreadable file is skipped, never fatal."""
    found = []
    for path in sorted((folder or checks_folder()).glob("*.json"), reverse=True):
        try:
            found.append(SavedCheck(path, open_saved(path)))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return found


def open_saved(path: Path) -> Report:
    return Report.from_saved(json.loads(path.read_text(encoding="utf-8")))


def export_json(report: Report, path: Path) -> None:
    """The documented shape, the same as `python -m engine.quantcheck --json`."""
    write_atomically(path, json.dumps(report.to_json(), indent=2))


def export_markdown(report: Report, path: Path) -> None:
    write_atomically(path, report.markdown())


def _free_name(folder: Path, stem: str) -> Path:
    candidate, number = folder / f"{stem}.json", 1
    while candidate.exists():
        number += 1
        candidate = folder / f"{stem}-{number}.json"
    return candidate
