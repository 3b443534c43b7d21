"""The command line: a relative or `~` --model path is made absolute once, before the window or engine see it."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.main import parse_args
from app.window.mainwindow import MainWindow
from tests.app.scripted_bridge import ScriptedBridge


def test_a_relative_model_path_is_resolved_at_the_command_line(qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               default_model: str) -> None:
    folder, name = Path(default_model).parent, Path(default_model).name
    monkeypatch.chdir(folder)
    args, qt_args = parse_args(["--model", name, "-platform", "offscreen"])
    assert args.model == default_model and qt_args == ["-platform", "offscreen"]
    monkeypatch.chdir(tmp_path)  # the engine thread and later code may run from anywhere
    window = MainWindow(ScriptedBridge(), model_path=args.model)  # type: ignore[arg-type]
    qtbot.addWidget(window)
    config = window.initial_model_config()
    assert config is not None and config.path == default_model and Path(config.path).is_file()
    window.close()


def test_a_home_relative_model_path_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert parse_args(["--model", "~/models/a.gguf"])[0].model == str(tmp_path / "models" / "a.gguf")
    assert parse_args([])[0].model is None
