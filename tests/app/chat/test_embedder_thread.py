"""The documents' GGUF embedding model loads in the document worker's threads, never on the GUI thread: after
a restart too, where the first question waits for it while the window keeps running (its timers fire)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QTimer

from engine.documents import embedder
from tests.app.chat.test_document_vectors import NO_SHARED_WORD, attach_and_index, long_text  # noqa: F401


class Loads:
    """Every GgufEmbedder made, with the thread that made it; `gate` holds a load until it is set."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.gate, self.entered = threading.Event(), threading.Event()
        self.gate.set()


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Loads]:
    recorded = Loads()
    real = embedder.GgufEmbedder

    class Recording(real):  # type: ignore[valid-type, misc]
        def __init__(self, *args: object, **kwargs: object) -> None:
            recorded.threads.append(threading.current_thread())
            recorded.entered.set()
            assert recorded.gate.wait(60), "the test never let the load go on"
            super().__init__(*args, **kwargs)

    embedder.close_embedders()
    monkeypatch.setattr(embedder, "GgufEmbedder", Recording)
    yield recorded
    embedder.close_embedders()


def test_after_a_restart_the_first_question_waits_for_the_workers_load(qtbot, make_window, default_model: str,  # type: ignore[no-untyped-def]
                                                                       long_text: Path, loads: Loads) -> None:  # noqa: F811
    window = make_window(context_length=512)
    window.settings.set("documents.embeddings", "gguf")
    window.settings.set("documents.embedding_model", default_model)
    tab = window.current_tab()
    attach_and_index(qtbot, tab, long_text)
    assert "\n\n[1] ledger.txt" in tab.attachments.message_text(NO_SHARED_WORD)  # by meaning: no word is shared
    embedder.close_embedders()  # as after a restart: the chat's index has its vectors, no embedder is loaded
    loads.gate.clear()
    loads.entered.clear()
    tab.attachments.attach([long_text])
    qtbot.waitUntil(lambda: all(chip.doc_id is not None for chip in tab.attachments.chips.values())
                    and loads.entered.is_set(), timeout=60_000)
    ticks: list[int] = []
    timer = QTimer(interval=20)
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start()
    QTimer.singleShot(300, loads.gate.set)  # fired by the GUI thread's event loop: only if the wait lets it run
    try:
        text = tab.attachments.message_text(NO_SHARED_WORD)
    finally:
        timer.stop()
    assert "\n\n[1] ledger.txt" in text
    assert len(ticks) >= 5  # the window kept running while the question waited
    assert len(loads.threads) == 2 and threading.main_thread() not in loads.threads
    assert embedder.loaded_embedder(default_model) is not None
    tab.attachments.worker.wait()
