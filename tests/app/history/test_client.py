"""HistoryClient + HistoryWorker: the history on its own thread, driven from the GUI thread with pytest-qt."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable

import pytest
from PySide6.QtCore import QThread

from app.history.store import HistoryStore
from app.history.client import HistoryClient
from app.history.stream_buffer import StreamBuffer
from app.history.worker import StartupReport
from engine.protocol import TurnFinished, TurnStats

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "history.sqlite3"


def _start(qtbot, path: Path, flush_interval_ms: int = 3_600_000) -> tuple[HistoryClient, StartupReport]:
    # The long default interval leaves flushing to the test, so it can count writes.
    client = HistoryClient(path, flush_interval_ms=flush_interval_ms)
    with qtbot.waitSignal(client.opened, timeout=10_000) as opened:
        client.start()
    return client, opened.args[0]


@pytest.fixture
def started(qtbot, db_path: Path):
    client, report = _start(qtbot, db_path)
    yield client, report
    assert client.close()


def _result(qtbot, read: Callable[..., None], *args: Any, **kwargs: Any) -> Any:
    """Run one of the client's reads on the worker and wait for its answer (also a barrier: requests run in order)."""
    box: list[Any] = []
    read(*args, on_done=box.append, on_error=lambda message: box.append(AssertionError(message)), **kwargs)
    qtbot.waitUntil(lambda: bool(box), timeout=10_000)
    if isinstance(box[0], AssertionError):
        raise box[0]
    return box[0]


def _stored(path: Path, message_id: str):
    reader = HistoryStore.open(path)  # a second connection, as after a restart; WAL lets it read now
    try:
        return reader.message(message_id)
    finally:
        reader.close()


def test_startup_restores_tabs_and_reports_interrupted_answers(qtbot, db_path: Path) -> None:
    store = HistoryStore.open(db_path)
    first, second = store.create_chat(title="first"), store.create_chat(title="second")
    store.create_chat(title="never used")  # opened and closed without a word
    deleted = store.create_chat(title="deleted")
    store.add_message(deleted.id, "user", "gone at the next start")
    store.delete_chat(deleted.id)
    question = store.add_message(second.id, "user", "Tell me a story")
    answer = store.add_message(second.id, "assistant", "", question.id, state="streaming")
    store.update_streaming_text(answer.id, "Once upon a")
    store.set_open_tabs([second.id, first.id], current=second.id)
    store.set_scroll_position(second.id, 0.4)
    store.close()

    client, report = _start(qtbot, db_path)
    try:
        assert [tab.chat.title for tab in report.tabs] == ["second", "first"]
        assert report.current_tab == second.id and report.recovered_from is None
        assert report.interrupted_messages == 1 and report.tabs[0].chat.scroll_position == 0.4
        assert [(m.text, m.state) for m in report.tabs[0].path()] == [
            ("Tell me a story", "complete"), ("Once upon a", "interrupted")]
        assert client._worker.thread() is client._thread and client._thread is not QThread.currentThread()
        listed = _result(qtbot, client.list_chats, include_deleted=True)  # deleted ones included
        assert sorted(chat.title for chat in listed) == ["first", "second"]  # not "never used", not "deleted"
    finally:
        assert client.close()


def test_streaming_text_is_coalesced_then_finished(qtbot, started, db_path: Path) -> None:
    client, _ = started
    chat_id = client.create_chat("Counting", "SmolLM2", {"temperature": 0.0})  # HistoryStore.create_chat's order
    question = client.add_message(chat_id, "user", "Count")
    answer = client.start_answer(chat_id, question)
    for i in range(500):
        client.append_streaming_text(answer, f"{i} ")
    client.flush_streaming()
    client.flush_streaming()  # nothing new: no second write
    assert client.streaming_writes == 1
    chat = _result(qtbot, client.chat, chat_id)
    assert (chat.title, chat.model, chat.settings, chat.title_auto) == ("Counting", "SmolLM2", {"temperature": 0.0}, False)
    saved = _stored(db_path, answer)
    assert (saved.text, saved.state) == ("".join(f"{i} " for i in range(500)), "streaming")

    client.append_streaming_text(answer, "done")
    stats = TurnStats(prompt_tokens=9, reused_tokens=0, generated_tokens=501, time_to_first_token_s=0.1,
                      decode_tokens_per_second=100.0, total_s=5.1)
    client.finish_turn(answer, TurnFinished(chat_id, "stop", stats, text=""))
    _result(qtbot, client.chat, chat_id)
    saved = _stored(db_path, answer)
    assert saved.text == "".join(f"{i} " for i in range(500)) + "done" and saved.state == "complete"
    assert (saved.prompt_tokens, saved.generated_tokens, saved.finish_reason) == (9, 501, "stop")
    assert saved.timings["decode_tokens_per_second"] == 100.0 and client.streaming_writes == 1


def test_thinking_streams_with_the_text_in_one_write_per_flush_and_is_finished(qtbot, started, db_path: Path) -> None:
    client, _ = started
    chat_id = client.create_chat()
    answer = client.start_answer(chat_id, client.add_message(chat_id, "user", "Think"))
    for i in range(100):
        client.append_streaming_reasoning(answer, f"t{i} ")
    client.flush_streaming()
    _result(qtbot, client.chat, chat_id)
    saved = _stored(db_path, answer)
    assert (saved.text, saved.reasoning, saved.state) == ("", "".join(f"t{i} " for i in range(100)), "streaming")
    client.append_streaming_reasoning(answer, "end.")
    client.append_streaming_text(answer, "Answer")
    client.flush_streaming()  # both parts grew: still one write
    assert client.streaming_writes == 2 and client.streamed_reasoning(answer).endswith("end.")
    client.finish_turn(answer, TurnFinished(chat_id, "stop", TurnStats(1, 0, 2, 0.1, 1.0, 1.0)), reasoning_s=4.5)
    _result(qtbot, client.chat, chat_id)
    saved = _stored(db_path, answer)
    assert (saved.text, saved.reasoning.endswith("t99 end."), saved.timings["reasoning_s"]) == ("Answer", True, 4.5)
    assert client.streamed_reasoning(answer) == ""  # finished: nothing buffered any more


def test_the_timer_writes_streaming_text_by_itself(qtbot, db_path: Path) -> None:
    client, _ = _start(qtbot, db_path, flush_interval_ms=50)
    try:
        chat_id = client.create_chat()
        answer = client.start_answer(chat_id, None)
        client.append_streaming_text(answer, "written without a flush call")
        qtbot.waitUntil(lambda: client.streaming_writes == 1, timeout=10_000)
        _result(qtbot, client.chat, chat_id)
        assert _stored(db_path, answer).text == "written without a flush call"
    finally:
        assert client.close()


def test_two_chats_streaming_at_once_lose_nothing(qtbot, started, db_path: Path) -> None:
    client, _ = started
    answers = [client.start_answer(client.create_chat(), None) for _ in range(2)]
    for i in range(400):
        for answer, word in zip(answers, ("left", "right")):
            client.append_streaming_text(answer, f"{word}{i} ")
        if i % 37 == 0:
            client.flush_streaming()  # as the timer would, mid-stream
    client.finish_answer(answers[0])
    client.append_streaming_text(answers[1], "tail")
    client.finish_answer(answers[1], state="interrupted", finish_reason="closed")
    _result(qtbot, client.list_chats)
    assert client.streaming_writes == 2 * len(range(0, 400, 37))
    left, right = (_stored(db_path, answer) for answer in answers)
    assert (left.text, left.state) == ("".join(f"left{i} " for i in range(400)), "complete")
    assert (right.text, right.state) == ("".join(f"right{i} " for i in range(400)) + "tail", "interrupted")


def test_edit_regenerate_and_switch_branches(qtbot, started) -> None:
    client, _ = started
    chat_id = client.create_chat()
    question = client.add_message(chat_id, "user", "Pick a number")
    first = client.start_answer(chat_id, question)
    client.finish_answer(first, "Seven")
    second = client.regenerate(first)
    client.append_streaming_text(second, "Three")
    client.finish_answer(second)
    edited = client.edit_message(question, "Pick a letter")
    letter = client.start_answer(chat_id, edited)
    client.finish_answer(letter, "Q")
    snapshot = _result(qtbot, client.load_chat, chat_id)
    assert [m.text for m in snapshot.path()] == ["Pick a letter", "Q"]
    assert snapshot.position(edited) == (2, 2)
    client.select_message(first)
    snapshot = _result(qtbot, client.load_chat, chat_id)
    assert [m.text for m in snapshot.path()] == ["Pick a number", "Seven"] and snapshot.position(first) == (1, 2)


def test_search_export_and_a_bad_import_through_the_worker(qtbot, started, tmp_path: Path) -> None:
    client, _ = started
    chat_id = client.create_chat()
    client.add_message(chat_id, "user", "The quick brown fox")
    client.set_open_tabs([])  # closed
    hits = _result(qtbot, client.search, "brown")
    assert [(h.chat_id, h.snippet_html, h.chat_is_open) for h in hits] == [(chat_id, "The quick <b>brown</b> fox", False)]
    exported = json.loads(_result(qtbot, client.export_json, chat_id))
    assert exported["messages"] == [{"role": "user", "content": "The quick brown fox"}]

    bad = tmp_path / "broken.json"
    bad.write_text('{"messages": [{"role": "user", "content": 5}]}', encoding="utf-8")
    errors: list[str] = []
    client.import_file(str(bad), on_done=errors.append, on_error=errors.append)
    qtbot.waitUntil(lambda: bool(errors), timeout=10_000)
    assert errors[0].startswith(str(bad)) and 'no text "content"' in errors[0]
    assert [c.id for c in _result(qtbot, client.list_chats)] == [chat_id]


def test_an_unwritable_folder_is_reported_once_and_nothing_hangs(qtbot, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    client = HistoryClient(blocker / "history.sqlite3", flush_interval_ms=3_600_000)
    errors: list[str] = []
    client.error_occurred.connect(errors.append)
    try:
        with qtbot.waitSignal(client.unavailable, timeout=10_000) as unavailable:
            client.start()
        assert "Could not create the chat history folder" in unavailable.args[0] and str(blocker) in unavailable.args[0]
        chat_id = client.create_chat()
        client.add_message(chat_id, "user", "kept in memory by the window")
        qtbot.waitUntil(lambda: bool(errors), timeout=10_000)
        _result_error = []
        client.list_chats(on_done=_result_error.append, on_error=_result_error.append)
        qtbot.waitUntil(lambda: bool(_result_error), timeout=10_000)
        assert errors == [unavailable.args[0]]  # two failed saves, one message
    finally:
        assert client.close()


def test_a_damaged_database_is_reported_at_startup(qtbot, db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"\x00garbage" * 512)
    client, report = _start(qtbot, db_path)
    try:
        assert report.recovered_from is not None
        assert Path(report.recovered_from).read_bytes() == b"\x00garbage" * 512 and report.tabs == ()
    finally:
        assert client.close()


def test_stream_buffer_joins_chunks_and_tracks_changes() -> None:
    buffer = StreamBuffer()
    buffer.begin("a")
    buffer.append("a", "Once")
    buffer.append("a", " upon")
    buffer.append("b", "x")
    assert buffer.take_dirty() == [("a", "Once upon"), ("b", "x")] and buffer.take_dirty() == []
    buffer.append("b", "y")
    assert buffer.take_dirty() == [("b", "xy")]
    assert buffer.end("a") == "Once upon" and "a" not in buffer and buffer.text("a") == ""


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="True is immortal from Python 3.12: no count to use up")
def test_worker_emits_never_use_up_the_count_of_true() -> None:
    """PySide6 6.12.0 on Python 3.11 loses a reference to True per Signal.emit; the shared guard covers the worker."""
    from app.history.worker import HistoryWorker
    from app.misc.qt_compat import guard_emit_refcount_bug

    guard_emit_refcount_bug()
    worker, before = HistoryWorker(), sys.getrefcount(True)
    for _ in range(2000):  # unguarded: True loses 2000 references (at 0 the interpreter aborts)
        worker.failed.emit(0, "x")
    assert sys.getrefcount(True) >= min(before, 1 << 39) - 50


_KILLED_APP = """
import sys
from PySide6.QtCore import QCoreApplication, QTimer
from app.history.client import HistoryClient

app = QCoreApplication([])
client = HistoryClient(sys.argv[1], flush_interval_ms=100)
state = {"i": 0}

def opened(report):
    chat_id = client.create_chat()
    question = client.add_message(chat_id, "user", "Write forever")
    answer = client.start_answer(chat_id, question)
    print("ANSWER", answer, flush=True)
    def token():
        client.append_streaming_text(answer, f"w{state['i']} ")
        state["i"] += 1
    def report_saved():
        client.message(answer, on_done=lambda m: print("SAVED", len(m.text), flush=True))
    for interval, slot in ((2, token), (150, report_saved)):
        timer = QTimer(app)
        timer.timeout.connect(slot)
        timer.start(interval)

client.opened.connect(opened)
client.start()
app.exec()
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_an_answer_survives_sigkill_mid_stream(tmp_path: Path, db_path: Path) -> None:
    """The store + worker half of the issue's kill test (the window half needs app/window/mainwindow.py)."""
    script = tmp_path / "killed_app.py"
    script.write_text(textwrap.dedent(_KILLED_APP), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO), "QT_QPA_PLATFORM": "offscreen"}
    process = subprocess.Popen([sys.executable, str(script), str(db_path)], stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)
    try:
        answer, saved_lengths = "", []
        for line in process.stdout:  # type: ignore[union-attr]
            word, value = line.split()
            if word == "ANSWER":
                answer = value
            elif int(value) > 0:
                saved_lengths.append(int(value))
            if len(saved_lengths) == 3:
                break
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL and len(saved_lengths) == 3

    store = HistoryStore.open(db_path)
    assert store.mark_interrupted_on_startup() == 1
    saved = store.message(answer)
    path = store.active_path(saved.chat_id)
    store.close()
    assert [(m.role, m.state) for m in path] == [("user", "complete"), ("assistant", "interrupted")]
    assert path[0].text == "Write forever" and len(saved.text) >= saved_lengths[-1]
    words = saved.text.split()
    assert words == [f"w{i}" for i in range(len(words))]  # a clean prefix of what streamed
