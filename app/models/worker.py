"""Hub requests off the GUI thread: a search, or a repo's files with verdicts, one at a time.

Each request runs on its own short thread and reports back through a Qt signal
(queued to the GUI thread). A newer request makes the older one's answer stale:
it is dropped, so typing a second query never shows the first one's results.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from PySide6.QtCore import QObject, Signal, Slot

from app.misc.thread_relay import emit_from_thread
from engine.hub.errors import HubError
from engine.hub.fit import RepoView, repo_view
from engine.hub.search import Format, RepoSummary, Sort, search
from engine.hub.settings import HubSettings
from engine.protocol import ModelConfig


class HubWorker(QObject):
    searched = Signal(object)  # list[RepoSummary]
    repo_opened = Signal(object)  # RepoView
    failed = Signal(str, str, str)  # what ("search" / "repo"), message, kind ("offline", "gated", ...)
    _answer = Signal(int, str, object)  # generation, what, result or HubError

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._generation = 0
        self._threads: list[threading.Thread] = []
        self._answer.connect(self._on_answer)

    def search(self, query: str, fmt: Format, sort: Sort, token: str = "") -> None:
        settings = HubSettings.from_env(token)
        self._run("search", lambda: search(query, settings, fmt=fmt, sort=sort))

    def open_repo(self, repo_id: str, config: ModelConfig, token: str = "", revision: str | None = None) -> None:
        settings = HubSettings.from_env(token)
        self._run("repo", lambda: repo_view(repo_id, settings, config, revision))

    def _run(self, what: str, work: Callable[[], Any]) -> None:
        self._generation += 1
        generation = self._generation

        def body() -> None:
            try:
                result: Any = work()
            except HubError as error:
                result = error
            except Exception as error:  # a bug or a surprise: still a sentence in the dialog, not a dead thread
                result = HubError(f"Something went wrong talking to the Hub: {error}")
            emit_from_thread(self, "_answer", generation, what, result)

        self._threads = [t for t in self._threads if t.is_alive()]
        thread = threading.Thread(target=body, name=f"hearth-hub-{what}", daemon=True)
        self._threads.append(thread)
        thread.start()

    @Slot(int, str, object)
    def _on_answer(self, generation: int, what: str, result: object) -> None:
        if generation != self._generation:
            return  # a newer request was made meanwhile
        if isinstance(result, HubError):
            self.failed.emit(what, str(result), result.kind)
        elif what == "search":
            self.searched.emit(list(result))  # type: ignore[call-overload]
        else:
            self.repo_opened.emit(result)

    def wait(self, timeout: float = 10.0) -> None:
        """Let running requests finish (their answers are dropped): no thread outlives the dialog."""
        self._generation += 1
        for thread in self._threads:
            thread.join(timeout)
        self._threads = []


__all__ = ["HubWorker", "RepoSummary", "RepoView"]
