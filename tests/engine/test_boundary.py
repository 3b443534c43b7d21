"""engine/ must never import Qt or app/: walk its imports and fail if it does."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "engine"
FORBIDDEN = ("PySide6", "PyQt5", "PyQt6", "shiboken6", "app", "qtpy")


def _imported_modules(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_engine_imports_no_qt_and_no_app() -> None:
    offenders = []
    files = sorted(ENGINE.rglob("*.py"))
    assert len(files) >= 5, "the engine package should be found"
    for file in files:
        for module in _imported_modules(file.read_text(encoding="utf-8")):
            if module.split(".")[0] in FORBIDDEN:
                offenders.append(f"{file.name}: {module}")
    assert offenders == []


def test_the_walker_would_catch_a_qt_import() -> None:
    assert "PySide6.QtCore" in _imported_modules("from PySide6.QtCore import QObject\n")
