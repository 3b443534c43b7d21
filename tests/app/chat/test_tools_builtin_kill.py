"""A fetch_page call running when Hearth is killed (kill -9) loses nothing: the chat and the memory notes are
intact, the call comes back interrupted, and the page is not fetched again by itself.

A child process runs the real window on the scripted bridge with fetch_page on and always allowed; the
bridge calls it on the stand-in web's slow page (which never answers in time), and once the page has
been asked for and the history holds the call, the parent kills the child with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from app.chat.tool_card import ToolCallCard
from app.chat.tool_round import INTERRUPTED
from app.history.notes import HistoryTools
from app.history.store import HistoryStore
from app.settings.store import Settings
from tests.app.chat.test_tools_kill import REPO, _saved_call, _tail
from tests.app.helpers import LONG, wait_restored
from tests.engine.tools.standin_web import StandinWeb, standin_web

QUESTION = "Read the slow page."

_KILLED_APP = """
import json, sys
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
QTimer.singleShot(60_000, lambda: app.exit(1))
state = {"tab": None}

def step():
    tab = state["tab"]
    if tab is None:
        if bridge.model_config is None or not window.history_ui.ready:
            return
        bridge.finish_loading(model_info())
        tab = state["tab"] = window.current_tab()
        tab.input.setPlainText(sys.argv[1])
        tab.send()
    elif bridge.submitted:
        timer.stop()
        bridge.call_tools(tab.chat_id, ToolCall("call_fetch", "fetch_page", json.dumps({"url": sys.argv[2]})))
        (card,) = tab.view.findChildren(ToolCallCard)
        print(card.state.upper(), tab.chat_id, flush=True)

timer = QTimer()
timer.timeout.connect(step)
timer.start(20)
sys.exit(app.exec())
"""


def _kill_while_fetching(tmp_path: Path, database: Path, web: StandinWeb, url: str) -> str:
    script = tmp_path / "killed_window.py"
    script.write_text(textwrap.dedent(_KILLED_APP), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO), "QT_QPA_PLATFORM": "offscreen"}
    with open(tmp_path / "child.err", "w+", encoding="utf-8") as errors:
        process = subprocess.Popen([sys.executable, str(script), QUESTION, url], cwd=REPO, env=env, text=True,
                                   stdout=subprocess.PIPE, stderr=errors, start_new_session=True)
        try:
            word, chat_id = (process.stdout.readline().split() + ["", ""])[:2]  # type: ignore[union-attr]
            assert word == "RUNNING", f"the child's call did not run ({word!r}):\n{_tail(errors)}"
            deadline = time.monotonic() + 30  # a readiness poll, not a timing assertion
            while (("/slow" not in web.paths() or not _saved_call(database, chat_id))
                   and time.monotonic() < deadline and process.poll() is None):
                time.sleep(0.05)
            assert "/slow" in web.paths() and '"call_fetch"' in _saved_call(database, chat_id), _tail(errors)
            process.send_signal(signal.SIGKILL)  # kill -9 while the page is being fetched
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    return chat_id


@pytest.mark.slow  # two windows, one in a child process
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_fetch_killed_while_running_restores_as_interrupted_and_keeps_the_notes(  # type: ignore[no-untyped-def]
        qtbot, scripted_window, settings_dir: Path, tmp_path: Path) -> None:
    settings = Settings.load()
    for key, value in (("tools.builtin_enabled", ["fetch_page", "memory"]), ("tools.web_allowed_hosts", ["127.0.0.1"]),
                       ("tools.always_allow", ["built-in/fetch_page"])):
        settings.set(key, value)
    settings.save()
    database = tmp_path / "data" / "history.sqlite3"
    HistoryStore.open(database).close()  # the history as a first start leaves it
    notes = HistoryTools(database)
    notes.save("The user uses metric units.")
    notes.close()
    with standin_web() as web:
        url = web.url("/slow", host="127.0.0.1")
        chat_id = _kill_while_fetching(tmp_path, database, web, url)

        window = scripted_window()
        wait_restored(qtbot, window)
        bridge, tab = window.bridge, window.current_tab()
        assert tab.chat_id == chat_id and [(m.role, m.content) for m in tab.messages] == [("user", QUESTION),
                                                                                          ("assistant", "")]
        assert json.loads(tab.messages[1].tool_calls[0].arguments) == {"url": url}
        (card,) = tab.view.findChildren(ToolCallCard)
        assert card.state == "interrupted"
        assert [note.text for note in window.tool_service.builtin.history.notes()] == ["The user uses metric units."]
        tab.input.setPlainText("Never mind.")
        tab.send()
        qtbot.waitUntil(lambda: bool(bridge.submitted), timeout=LONG)
        sent = bridge.submitted[-1][1]
        assert [(m.role, m.content) for m in sent[-3:]] == [("assistant", ""), ("tool", INTERRUPTED),
                                                             ("user", "Never mind.")]
        assert sent[0].content.endswith("- The user uses metric units.")
        assert web.paths().count("/slow") == 1  # the page was asked for once, by the killed app
