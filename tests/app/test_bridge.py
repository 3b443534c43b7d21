"""EngineBridge on the real engine and the real default model: events arrive as typed signals on the GUI thread."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Iterator

import pytest

from app.bridge import ChatMessage, EngineBridge, ModelConfig, SamplingParams

LONG = SamplingParams(temperature=0.0, max_new_tokens=400, ignore_eos=True)  # runs until stopped
SHORT = SamplingParams(temperature=0.0, max_new_tokens=24, seed=0)
QUESTION = (ChatMessage("user", "Name three colours."),)


@pytest.fixture
def bridge(qtbot) -> Iterator[EngineBridge]:  # type: ignore[no-untyped-def]
    bridge = EngineBridge(stats_interval_s=0.1)
    bridge.start()
    yield bridge
    bridge.shutdown()


def load(qtbot, bridge: EngineBridge, path: str, **config: object) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(bridge.model_loaded, timeout=60_000) as blocker:
        # One engine thread: the GUI thread and other jobs share this machine's 2 cores.
        bridge.load_model(ModelConfig(path=path, context_length=1024, threads=1, **config))  # type: ignore[arg-type]
    assert blocker.args[0].backend == "llamacpp"


class Recorder:
    """Everything the bridge said, in order, and on which thread it arrived."""

    def __init__(self, bridge: EngineBridge) -> None:
        self.tokens: list[tuple[str, str]] = []
        self.started: list[str] = []
        self.finished: dict[str, object] = {}
        self.threads: set[str] = set()
        bridge.token_received.connect(self._on_token)
        bridge.turn_started.connect(lambda event: self.started.append(event.chat_id))
        bridge.turn_finished.connect(lambda event: self.finished.__setitem__(event.chat_id, event))

    def _on_token(self, chat_id: str, text: str) -> None:
        self.threads.add(threading.current_thread().name)
        self.tokens.append((chat_id, text))

    def text(self, chat_id: str) -> str:
        return "".join(text for chat, text in self.tokens if chat == chat_id)

    def count(self, chat_id: str) -> int:
        return sum(1 for chat, _ in self.tokens if chat == chat_id)

    def switches(self) -> int:
        """How often the stream changed from one chat to another."""
        chats = [chat for chat, _ in self.tokens]
        return sum(1 for a, b in zip(chats, chats[1:]) if a != b)


def test_two_chats_stream_at_once_and_tokens_arrive_on_the_gui_thread(qtbot, bridge, default_model) -> None:
    load(qtbot, bridge, default_model)
    seen = Recorder(bridge)
    bridge.submit("a", QUESTION, SHORT)
    bridge.submit("b", (ChatMessage("user", "Write one sentence about tea."),), SHORT)
    qtbot.waitUntil(lambda: len(seen.finished) == 2, timeout=60_000)
    assert seen.switches() >= 4  # interleaved, not one chat after the other
    assert seen.threads == {threading.main_thread().name}
    for chat in ("a", "b"):
        event = seen.finished[chat]
        assert event.reason in ("stop", "length")  # type: ignore[attr-defined]
        assert event.text == seen.text(chat) != ""  # type: ignore[attr-defined]
        assert 0 < event.stats.generated_tokens <= 24  # type: ignore[attr-defined]


def test_cancel_ends_one_chat_while_the_other_goes_on(qtbot, bridge, default_model) -> None:
    load(qtbot, bridge, default_model)
    seen = Recorder(bridge)
    bridge.submit("a", QUESTION, LONG)
    bridge.submit("b", QUESTION, LONG)
    qtbot.waitUntil(lambda: seen.count("a") >= 5 and seen.count("b") >= 5, timeout=60_000)
    with qtbot.waitSignal(bridge.turn_finished, timeout=30_000, check_params_cb=lambda e: e.chat_id == "a") as done:
        bridge.cancel("a")
    assert done.args[0].reason == "cancelled"
    b_before = seen.count("b")
    qtbot.waitUntil(lambda: seen.count("b") >= b_before + 10, timeout=30_000)
    assert "b" not in seen.finished
    a_after = seen.count("a")
    qtbot.waitUntil(lambda: seen.count("b") >= b_before + 20, timeout=30_000)
    assert seen.count("a") == a_after  # nothing more for the cancelled chat
    with qtbot.waitSignal(bridge.turn_finished, timeout=30_000, check_params_cb=lambda e: e.chat_id == "b"):
        bridge.cancel("b")


def test_closing_a_chat_frees_its_slot_for_a_waiting_one(qtbot, bridge, default_model) -> None:
    load(qtbot, bridge, default_model, slots=2)
    seen = Recorder(bridge)
    bridge.submit("a", QUESTION, LONG)
    bridge.submit("b", QUESTION, LONG)
    bridge.submit("c", QUESTION, SHORT)
    qtbot.waitUntil(lambda: seen.count("a") >= 5 and seen.count("b") >= 5, timeout=60_000)
    assert seen.started == ["a", "b"] and seen.count("c") == 0  # both slots taken: c waits
    with qtbot.waitSignal(bridge.turn_started, timeout=30_000, check_params_cb=lambda e: e.chat_id == "c"):
        bridge.close_chat("a")
    assert seen.finished["a"].reason == "cancelled"  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: "c" in seen.finished, timeout=60_000)
    assert seen.text("c") != "" and "b" not in seen.finished  # c was served while b still ran
    with qtbot.waitSignal(bridge.turn_finished, timeout=30_000, check_params_cb=lambda e: e.chat_id == "b"):
        bridge.cancel("b")


def test_stats_report_speed_and_busy_slots_while_answering(qtbot, bridge, default_model) -> None:
    load(qtbot, bridge, default_model)
    stats: list[object] = []
    bridge.stats_updated.connect(stats.append)
    bridge.submit("a", QUESTION, LONG)
    bridge.submit("b", QUESTION, LONG)
    qtbot.waitUntil(lambda: any(s.tokens_per_second > 0 and s.slots_busy == 2 for s in stats), timeout=60_000)
    busy = next(s for s in stats if s.slots_busy == 2 and s.tokens_per_second > 0)
    assert busy.slots_total == 4 and {chat for chat, _ in busy.chat_tokens_per_second} <= {"a", "b"}
    assert busy.model_bytes > 50_000_000 and busy.kv_cache_bytes > 0
    for chat in ("a", "b"):
        with qtbot.waitSignal(bridge.turn_finished, timeout=30_000, check_params_cb=lambda e, c=chat: e.chat_id == c):
            bridge.cancel(chat)


def test_a_chat_error_names_its_chat(qtbot, bridge) -> None:
    with qtbot.waitSignal(bridge.chat_error, timeout=30_000) as error:
        bridge.submit("lonely", QUESTION, SHORT)  # no model loaded yet
    chat_id, message = error.args
    assert chat_id == "lonely" and "No model" in message


def test_a_model_that_fails_to_load_is_reported_in_words(qtbot, bridge, tmp_path: Path) -> None:
    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"this is not a GGUF file")
    with qtbot.waitSignal(bridge.model_load_failed, timeout=60_000) as failed:
        bridge.load_model(ModelConfig(path=str(bad)))
    assert "not-a-model.gguf" in failed.args[0]
    assert bridge.model_info is None and not bridge.loading


def test_restart_brings_back_a_working_engine(qtbot, bridge, default_model) -> None:
    load(qtbot, bridge, default_model)
    with qtbot.waitSignal(bridge.model_loaded, timeout=60_000):
        bridge.restart()
    assert bridge.running and bridge.model_info is not None
    with qtbot.waitSignal(bridge.turn_finished, timeout=60_000) as done:
        bridge.submit("after", QUESTION, SHORT)
    assert done.args[0].text != ""


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="True is immortal from Python 3.12: no count to use up")
def test_many_emits_never_use_up_the_reference_count_of_true() -> None:
    """PySide6 6.12.0 on Python 3.11 drops a reference to True per emit; the bridge guards it."""
    from PySide6.QtCore import QObject, Signal

    from app.misc.qt_compat import guard_emit_refcount_bug

    class Emitter(QObject):
        ping = Signal(str, str)

    guard_emit_refcount_bug()
    emitter, before = Emitter(), sys.getrefcount(True)
    for _ in range(20_000):  # more than True's whole count on an unguarded 6.12.0
        emitter.ping.emit("chat", "token")
    # Unchanged on a sound PySide6; still astronomically high where the guard was needed.
    assert sys.getrefcount(True) >= min(before, 1 << 39) - 10
