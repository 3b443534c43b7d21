"""The layers' boundary, checked over every module: engine/ never imports Qt or app/,
and in app/ only the bridge reaches the engine's insides (the host that owns the loop,
the loop, scheduler, slots, runners).

Every import counts: module level, inside functions, and under TYPE_CHECKING.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QT_OR_APP = ("PySide6", "PyQt5", "PyQt6", "shiboken6", "qtpy", "app")
ENGINE_INSIDES = ("engine.clients", "engine.loop", "engine.scheduler", "engine.slots", "engine.runners")
BRIDGE = ROOT / "app" / "bridge.py"


def imported_modules(source: str, package: str = "") -> set[str]:
    """Every module a source file imports, relative imports resolved against `package`."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)  # `from engine import loop`
    return names


def boundary_offenders(root: Path, layer: str) -> list[str]:
    """`layer` is "engine" or "app"; each offender as "path: module"."""
    offenders = []
    bridge = root / "app" / "bridge.py"
    for file in sorted((root / layer).rglob("*.py")):
        relative = file.relative_to(root)
        package = ".".join(relative.with_suffix("").parts[:-1])
        for module in sorted(imported_modules(file.read_text(encoding="utf-8"), package)):
            if layer == "engine" and module.split(".")[0] in QT_OR_APP:
                offenders.append(f"{relative.as_posix()}: {module}")
            elif layer == "app" and file != bridge and _reaches(module, ENGINE_INSIDES):
                offenders.append(f"{relative.as_posix()}: {module}")
    return offenders


def _reaches(module: str, targets: tuple[str, ...]) -> bool:
    return any(module == t or module.startswith(t + ".") for t in targets)


def test_engine_imports_no_qt_and_no_app() -> None:
    assert len(list((ROOT / "engine").rglob("*.py"))) >= 20, "the engine package should be found"
    assert boundary_offenders(ROOT, "engine") == []


def test_only_the_bridge_reaches_the_engines_insides() -> None:
    assert len(list((ROOT / "app").rglob("*.py"))) >= 30 and BRIDGE.exists()
    assert boundary_offenders(ROOT, "app") == []


def test_the_check_catches_a_function_level_import_in_any_app_module(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "app", tmp_path / "app")
    victim = tmp_path / "app" / "history" / "sync.py"
    victim.write_text(victim.read_text(encoding="utf-8")
                      + "\n\ndef _sneaky() -> None:\n    from engine.scheduler import Scheduler\n", encoding="utf-8")
    bridge_imports = {m for m in imported_modules(BRIDGE.read_text(encoding="utf-8")) if _reaches(m, ENGINE_INSIDES)}
    assert bridge_imports, "the bridge itself reaches the engine loop"
    assert boundary_offenders(tmp_path, "app") == ["app/history/sync.py: engine.scheduler",
                                                   "app/history/sync.py: engine.scheduler.Scheduler"]


def test_the_walker_resolves_every_import_form() -> None:
    assert "engine.loop" in imported_modules("from engine import loop\n")
    assert "app.bridge" in imported_modules("from .. import bridge\n", "app.window")
    assert "PySide6" in imported_modules("if TYPE_CHECKING:\n    import PySide6\n")
    assert _reaches("engine.runners.llamacpp.runner", ENGINE_INSIDES)
    assert not _reaches("engine.runnersx", ENGINE_INSIDES)


def test_the_engine_check_catches_qt(tmp_path: Path) -> None:
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "x.py").write_text("def f():\n    from PySide6.QtCore import QObject\n")
    assert boundary_offenders(tmp_path, "engine") == ["engine/x.py: PySide6.QtCore", "engine/x.py: PySide6.QtCore.QObject"]
