"""Fixtures for the Qt side: a Qt warning fails the test, settings in a temporary folder, a real window.

pytest-qt's own message capture stops after the test body, so warnings raised
while a window closes would slip through; this conftest installs one message
handler for setup, body and teardown instead and fails the test at the end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest
from PySide6.QtCore import QMessageLogContext, QtMsgType, qInstallMessageHandler

from app.misc.qt_compat import guard_emit_refcount_bug

guard_emit_refcount_bug()  # PySide6 6.12.0 on Python 3.11 would abort a long test run otherwise

HERE = Path(__file__).resolve().parent
FAILING = {QtMsgType.QtWarningMsg, QtMsgType.QtCriticalMsg, QtMsgType.QtFatalMsg}
# The offscreen platform cannot pass a window's size limits on to a window system (every
# QMainWindow triggers it there), nor raise a popup or let it grab the keyboard (every
# Qt.WindowType.Popup shown). They say nothing about our code.
IGNORED = ("This plugin does not support propagateSizeHints()", "This plugin does not support raise()",
           "This plugin does not support grabbing the keyboard")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.no_qt_log)  # our handler below replaces pytest-qt's


@pytest.fixture(autouse=True)
def fail_on_qt_warnings() -> Iterator[list[str]]:
    """Any Qt warning, critical or fatal message during the test fails it."""
    messages: list[str] = []

    def handler(kind: QtMsgType, context: QMessageLogContext, text: str) -> None:
        if kind in FAILING and not text.startswith(IGNORED):
            messages.append(f"{kind.name}: {text} ({context.file}:{context.line})")

    previous = qInstallMessageHandler(handler)
    yield messages
    qInstallMessageHandler(previous)
    if messages:
        pytest.fail("Qt reported problems:\n" + "\n".join(messages), pytrace=False)


@pytest.fixture(autouse=True)
def settings_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The user's own settings and chats never leak into a test."""
    folder = tmp_path / "config"
    monkeypatch.setenv("HEARTH_CONFIG_DIR", str(folder))
    monkeypatch.setenv("HEARTH_DATA_DIR", str(tmp_path / "data"))  # nor the user's chat history
    from app.settings import secrets

    secrets.forget_cache()  # nor a key another test stored
    yield folder
    secrets.forget_cache()


@pytest.fixture
def make_window(qtbot, default_model: str) -> Iterator[Callable[..., object]]:  # type: ignore[no-untyped-def]
    """A real MainWindow on the real default model, shown; `settings` are written first."""
    from app.bridge import SamplingParams
    from app.window.mainwindow import MainWindow
    from app.settings.store import Settings

    windows: list[MainWindow] = []

    def make(wait_for_model: bool = True, max_new_tokens: int = 24, model_path: str | None = None,
             **settings: object) -> MainWindow:
        """`model_path`: another model than the default (a family's fixture)."""
        settings.setdefault("threads", 1)  # the GUI and other jobs share this machine's 2 cores
        # no F32 copy for long prompts: each window would prepare and check one at load, and how long
        # prompts are read is the engine tests' business (test_prompt_copy.py, test_engine_llamacpp.py)
        settings.setdefault("prompt_copy", "off")
        stored = Settings.load()
        for key, value in settings.items():
            stored.set(f"model.{key}", value)
        stored.save()
        window = MainWindow(model_path=model_path or default_model)
        window.default_sampling = SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens, seed=0)
        window.system_prompt = ""
        qtbot.addWidget(window)
        windows.append(window)
        if wait_for_model:
            with qtbot.waitSignal(window.bridge.model_loaded, timeout=60_000):
                window.show()
            window.activateWindow()
            qtbot.waitUntil(window.isActiveWindow)  # keyboard shortcuts go to the active window only
        return window

    yield make
    for window in windows:
        window.close()  # joins the engine thread


@pytest.fixture
def scripted_window(qtbot) -> Iterator[Callable[..., object]]:  # type: ignore[no-untyped-def]
    """A real MainWindow (real tabs, history, gauge) on a ScriptedBridge: fast, for what a model adds nothing to.

    `info`: the model the scripted engine reports loaded once the window is shown (None: it stays loading).
    """
    from app.window.mainwindow import MainWindow
    from tests.app.scripted_bridge import ScriptedBridge, model_info

    windows: list[MainWindow] = []

    def make(info: object = "default", show: bool = True) -> MainWindow:
        bridge = ScriptedBridge()
        window = MainWindow(bridge, model_path="/models/test.gguf")  # type: ignore[arg-type]
        qtbot.addWidget(window)
        windows.append(window)
        if show:
            window.show()
            qtbot.waitUntil(lambda: bridge.model_config is not None)  # the window asked for its model
            if info is not None:
                bridge.finish_loading(model_info() if info == "default" else info)  # type: ignore[arg-type]
        return window

    yield make
    for window in windows:
        window.close()
