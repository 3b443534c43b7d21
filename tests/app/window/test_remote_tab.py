"""The real window on the remote backend: a tab chats with a server elsewhere (the fake SSE server on 127.0.0.1)."""

from __future__ import annotations

from typing import Iterator

import pytest

from app.settings import secrets
from app.settings.store import Settings
from tests.app.helpers import answer_text, send_and_wait, wait_restored
from tests.engine.remote.sse_server import WORDS, FakeServer

KEY = "sk-window-test"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(api_key=KEY) as fake:
        yield fake


@pytest.fixture
def remote_window(qtbot, server: FakeServer):  # type: ignore[no-untyped-def]
    from app.bridge import SamplingParams
    from app.window.mainwindow import MainWindow

    secrets.forget_cache()
    secrets.save_api_key(KEY)
    settings = Settings.load()
    settings.set("model.backend", "remote")
    settings.set("remote.url", server.url)
    settings.save()
    window = MainWindow()  # the settings' backend: no model path overriding it
    window.default_sampling = SamplingParams(temperature=0.0, max_new_tokens=32, seed=0)
    window.system_prompt = ""
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.bridge.model_loaded, timeout=30_000):
        window.show()
    yield window
    window.close()
    secrets.forget_cache()


def test_a_tab_chats_with_the_remote_server_and_the_gauge_says_remote(qtbot, remote_window,  # type: ignore[no-untyped-def]
                                                                      server: FakeServer) -> None:
    window, tab = remote_window, remote_window.current_tab()
    assert send_and_wait(qtbot, tab, "Say hello") == "".join(WORDS)
    footer = [card for card in tab.view.cards() if card.role == "assistant"][-1].footer.text()
    assert footer.startswith(f"{len(WORDS)} tokens · ")
    gauge = window.gauge
    qtbot.waitUntil(lambda: gauge.stats is not None and gauge.stats.latency_ms > 0)
    assert gauge.device_label.text() == "remote" and gauge.memory_bar.isHidden()
    assert gauge.memory_label.text().startswith(f"{server.url[:-3]} · latency ")
    assert gauge.model_label.text() == "fake-small · remote"
    assert "an OpenAI-compatible server answers" in gauge.details_html()
    assert server.record.requests[-1][1]["Authorization"] == f"Bearer {KEY}"


def test_thinking_is_shown_apart_folded_and_restored_after_a_restart(qtbot, remote_window) -> None:  # type: ignore[no-untyped-def]
    from app.window.mainwindow import MainWindow

    tab = remote_window.current_tab()
    assert send_and_wait(qtbot, tab, "scenario: reasoning") == "The answer is 4."
    card = [card for card in tab.view.cards() if card.role == "assistant"][-1]
    block = card.thinking_block
    assert block.header().startswith("Thought for ") and not block.isHidden()  # measured here: the server says nothing
    assert block.body.isHidden() and block.text() == "Two plus two: that makes four."
    block.toggle.click()
    assert not block.body.isHidden() and block.body.text() == "Two plus two: that makes four."
    assert "Two plus two" not in answer_text(tab)
    assert tab.messages[-1].reasoning == "Two plus two: that makes four."
    header, chat_id = block.header(), tab.chat_id
    remote_window.close()  # the remote turn's thinking is stored now, not just shown

    again = MainWindow()
    qtbot.addWidget(again)
    with qtbot.waitSignal(again.bridge.model_loaded, timeout=30_000):
        again.show()
    try:
        wait_restored(qtbot, again)
        restored = again.current_tab()
        assert restored.chat_id == chat_id
        assert [(m.content, m.reasoning) for m in restored.messages][-1] == (
            "The answer is 4.", "Two plus two: that makes four.")
        restored_block = [c for c in restored.view.cards() if c.role == "assistant"][-1].thinking_block
        assert restored_block.header() == header and restored_block.text() == "Two plus two: that makes four."
    finally:
        again.close()


def test_a_dropped_stream_keeps_the_partial_answer_marked_interrupted(qtbot, remote_window) -> None:  # type: ignore[no-untyped-def]
    tab = remote_window.current_tab()
    assert send_and_wait(qtbot, tab, "scenario: dropped") == "".join(WORDS)
    cards = tab.view.cards()
    assert cards[-2].role == "assistant" and "interrupted: Regenerate to answer again" in cards[-2].footer.text()
    assert cards[-1].role == "error" and "was lost mid-answer" in cards[-1].text()
    assert tab.regenerate_button.isEnabled()
    assert send_and_wait(qtbot, tab, "Say hello") == "".join(WORDS)  # the same server, the next turn
