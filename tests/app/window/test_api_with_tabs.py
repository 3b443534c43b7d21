"""The window and its local API in one process, on one engine: four streaming API clients and a tab answer together.

Also what the window shows of the API (the indicator, the gauge), and a port
that is already taken.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import replace

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from app.settings.store import Settings
from tests.app.helpers import type_and_send

CLIENTS = 4


def enable_api(port: int = 0, **values: object) -> None:
    settings = Settings.load()
    settings.set("server.enabled", True)
    settings.set("server.port", port)
    for key, value in values.items():
        settings.set(f"server.{key}", value)
    settings.save()


def stream_one(url: str, index: int, timeline: list[tuple[float, int, str]], lock: threading.Lock) -> None:
    import openai

    with openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=120) as client:
        stream = client.chat.completions.create(
            model="SmolLM2-135M-Instruct.Q4_1", stream=True, max_tokens=40, temperature=0,
            messages=[{"role": "user", "content": f"Write a story about a lighthouse, part {index}."}],
            extra_body={"ignore_eos": True})
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                with lock:
                    timeline.append((time.perf_counter(), index, chunk.choices[0].delta.content))


def test_four_api_streams_and_a_tab_answer_together(qtbot, make_window) -> None:  # type: ignore[no-untyped-def]
    enable_api()
    window = make_window(slots=CLIENTS + 1, max_new_tokens=60)
    window.default_sampling = replace(window.default_sampling, ignore_eos=True)
    qtbot.waitUntil(lambda: window.api.url != "", timeout=30_000)
    url = window.api.url
    tab_times: list[float] = []
    peak = [0]
    window.api.in_flight_changed.connect(lambda count: peak.__setitem__(0, max(peak[0], count)))
    tab = window.current_tab()
    window.bridge.token_received.connect(lambda chat, _text: tab_times.append(time.perf_counter())
                                         if chat == tab.chat_id else None)
    timeline: list[tuple[float, int, str]] = []
    lock = threading.Lock()
    clients = [threading.Thread(target=stream_one, args=(url, i, timeline, lock)) for i in range(CLIENTS)]
    for client in clients:
        client.start()
    type_and_send(qtbot, tab, "Tell me about the sea.")
    qtbot.waitUntil(lambda: not any(c.is_alive() for c in clients) and not tab.answering, timeout=180_000)
    spans = []
    for index in range(CLIENTS):
        times = [t for t, i, _ in timeline if i == index]
        assert len(times) >= 20, index  # it streamed, piece by piece
        spans.append((times[0], times[-1]))
    latest_start, earliest_end = max(start for start, _ in spans), min(end for _, end in spans)
    assert latest_start < earliest_end  # all four were streaming at the same moment: batched, not queued
    assert any(latest_start < t < earliest_end for t in tab_times)  # and the tab streamed in the middle of them
    assert len(tab_times) >= 30
    assert peak[0] == CLIENTS
    qtbot.waitUntil(lambda: window.api.in_flight == 0, timeout=10_000)
    assert window.api_indicator.text().endswith("· 0 requests")


def test_the_indicator_shows_the_url_and_copies_it(qtbot, make_window) -> None:  # type: ignore[no-untyped-def]
    enable_api()
    window = make_window()
    qtbot.waitUntil(lambda: window.api.url != "", timeout=30_000)
    indicator = window.api_indicator
    port = window.api.url.rsplit(":", 1)[1].split("/")[0]
    assert indicator.isVisible() and indicator.text() == f"API 127.0.0.1:{port} · 0 requests"
    assert window.api.url in window.gauge.details_html() and "API 0" in window.gauge.slots_label.text()
    with qtbot.waitSignal(indicator.copied):
        qtbot.mouseClick(indicator, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == window.api.url


def test_a_port_in_use_is_said_clearly(qtbot, make_window) -> None:  # type: ignore[no-untyped-def]
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    try:
        port = blocker.getsockname()[1]
        enable_api(port)
        window = make_window()
        qtbot.waitUntil(lambda: window.api.error != "", timeout=30_000)
        assert f"Port {port} on 127.0.0.1 is already in use by another program" in window.api.error
        assert "Choose another port" in window.api.error
        assert window.api_indicator.text() == "API off: could not start"
        assert window.api.error in window.api_indicator.toolTip()
        assert window.api.error in window.statusBar().currentMessage()
    finally:
        blocker.close()
    window.api_indicator.retry_requested.emit()  # the port is free now: a click tries again
    assert window.api.url.endswith(f":{port}/v1") and window.api.error == ""


def test_the_api_is_off_by_default(qtbot, make_window) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    assert not window.api.running and window.api_indicator.isHidden()
    assert Settings.load().get("server.host") == "127.0.0.1"
