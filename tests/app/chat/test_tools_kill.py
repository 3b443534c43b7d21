"""A tool call waiting for approval when Hearth is killed (kill -9) comes back interrupted and never runs.

A child process runs the real window on the scripted bridge with the test's stdio MCP server in its
mcp.json; the bridge calls `add`, the approval card waits, and once the history database holds the
call the parent kills the child with SIGKILL. The parent then opens the window on the same folders.
The server's call log (HEARTH_TEST_CALL_LOG) shows which `add` calls ran, across both processes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.chat.tool_card import ToolCallCard
from app.chat.tool_round import INTERRUPTED
from app.tools.service import ToolService
from engine.protocol import ToolCall
from engine.tools.config import config_text
from tests.app.helpers import LONG, wait_restored
from tests.engine.tools.conftest import stdio_server
from tests.peek import peek

REPO = Path(__file__).resolve().parents[3]
QUESTION = "What is 7 + 8?"
WAITING = ToolCall("call_wait", "add", '{"a": 7, "b": 8}')

_KILLED_APP = """
import sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from app.chat.tool_card import ToolCallCard
from app.misc.scripted_bridge import ScriptedBridge, model_info
from app.window.mainwindow import MainWindow
from engine.protocol import ToolCall

app = QApplication([])
bridge = ScriptedBridge()
window = MainWindow(bridge, model_path="/models/test.gguf")
window.show()
QTimer.singleShot(60_000, lambda: app.exit(1))  # never killed: end anyway, so the parent's read ends
state = {"tab": None}

def step():
    tab = state["tab"]
    if tab is None:
        if bridge.model_config is None or not window.history_ui.ready:
            return
        bridge.finish_loading(model_info())
        tab = state["tab"] = window.current_tab()
        tab.input.setPlainText(sys.argv[1])
        tab.send()  # the server starts and is listed, then the question is submitted
    elif bridge.submitted:
        timer.stop()
        bridge.call_tools(tab.chat_id, ToolCall("call_wait", "add", '{"a": 7, "b": 8}'))
        (card,) = tab.view.findChildren(ToolCallCard)
        print("WAITING" if card.waiting else "NOT-WAITING", tab.chat_id, flush=True)

timer = QTimer()
timer.timeout.connect(step)
timer.start(20)
sys.exit(app.exec())
"""


def _saved_call(database: Path, chat_id: str) -> str:
    """The tool calls of the chat's answer as the history database holds them ("" until saved)."""
    row = peek(database, "SELECT tool_calls FROM messages WHERE chat_id = ? AND role = 'assistant'"
                         " AND tool_calls != '[]'", (chat_id,))
    return str(row[0]) if row else ""


def _kill_while_waiting(tmp_path: Path, database: Path) -> str:
    """Run the window in a child until its `add` card waits and is saved, then SIGKILL it; the chat's id."""
    script = tmp_path / "killed_window.py"
    script.write_text(textwrap.dedent(_KILLED_APP), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO), "QT_QPA_PLATFORM": "offscreen"}
    with open(tmp_path / "child.err", "w+", encoding="utf-8") as errors:
        process = subprocess.Popen([sys.executable, str(script), QUESTION], cwd=REPO, env=env, text=True,
                                   stdout=subprocess.PIPE, stderr=errors, start_new_session=True)
        try:
            word, chat_id = (process.stdout.readline().split() + ["", ""])[:2]  # type: ignore[union-attr]
            assert word == "WAITING", f"the child's card did not wait ({word!r}):\n{_tail(errors)}"
            deadline = time.monotonic() + 30  # a readiness poll, not a timing assertion
            while not _saved_call(database, chat_id) and time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.05)
            assert '"call_wait"' in _saved_call(database, chat_id), f"the call was never saved:\n{_tail(errors)}"
            process.send_signal(signal.SIGKILL)  # kill -9 while the card waits for approval
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
            try:
                os.killpg(process.pid, signal.SIGKILL)  # the server the child started, if it outlived it
            except (ProcessLookupError, PermissionError):
                pass
    assert process.returncode == -signal.SIGKILL
    return chat_id


def _tail(errors) -> str:  # type: ignore[no-untyped-def]
    errors.seek(0)
    return errors.read()[-3000:]


@pytest.mark.slow  # two windows and two server starts, one in a child process: ~7 s
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_call_killed_while_waiting_for_approval_restores_as_interrupted_and_runs_nothing(  # type: ignore[no-untyped-def]
        qtbot, scripted_window, settings_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    call_log, folder = tmp_path / "calls.log", tmp_path / "tool_files"
    folder.mkdir()
    settings_dir.mkdir(parents=True, exist_ok=True)
    server = replace(stdio_server(folder), env=(("HEARTH_TEST_CALL_LOG", str(call_log)),))
    (settings_dir / "mcp.json").write_text(config_text((server,)))
    chat_id = _kill_while_waiting(tmp_path, tmp_path / "data" / "history.sqlite3")
    assert not call_log.exists()  # the killed app ran nothing

    calls: list[tuple[str, str, str]] = []
    call = ToolService.call

    def counted(self: ToolService, token: object, server: str, tool: str, arguments: str):  # type: ignore[no-untyped-def]
        calls.append((server, tool, arguments))
        return call(self, token, server, tool, arguments)

    monkeypatch.setattr(ToolService, "call", counted)
    window = scripted_window()
    wait_restored(qtbot, window)
    bridge, tab = window.bridge, window.current_tab()
    assert tab.chat_id == chat_id
    assert [(m.role, m.content) for m in tab.messages] == [("user", QUESTION), ("assistant", "")]
    assert tab.messages[1].tool_calls == (WAITING,)
    (card,) = tab.view.findChildren(ToolCallCard)
    assert card.state == "interrupted" and not card.waiting
    assert card.allow_button.isHidden() and card.always_button.isHidden() and card.deny_button.isHidden()
    assert bridge.submitted == [] and calls == []  # nothing ran or was sent by itself

    tab.input.setPlainText("Never mind.")
    tab.send()  # the server starts again and is listed, then the conversation goes to the model
    qtbot.waitUntil(lambda: bool(bridge.submitted), timeout=LONG)
    sent = bridge.submitted[-1][1]
    assert [(m.role, m.content) for m in sent[-3:]] == [("assistant", ""), ("tool", INTERRUPTED), ("user", "Never mind.")]
    assert sent[-2].tool_call_id == "call_wait" and calls == [] and not call_log.exists()

    bridge.call_tools(tab.chat_id, ToolCall("call_new", "add", '{"a": 1, "b": 2}'))  # the log does record a call
    qtbot.mouseClick(tab.view.findChildren(ToolCallCard)[-1].allow_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(bridge.submitted) == 2, timeout=LONG)
    assert calls == [("test", "add", '{"a": 1, "b": 2}')]
    assert call_log.read_text() == "add 1.0 2.0\n"  # only the call allowed after the restart ever ran
