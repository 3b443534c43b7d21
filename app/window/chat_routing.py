"""The engine's events for one chat go to the tab or Compare pane that holds it.

Every tab and Compare pane has a chat id; the engine's tokens, thinking, ends of turns, errors and
speeds carry it. The window registers each tab here when it opens and drops it when it closes
(app/window/mainwindow.py), Compare its panes (app/window/compare.py); late events for a closed
chat are dropped. The gauge names a chat by its tab's title.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject

from app.bridge import EngineBridge, EngineStats, TurnFinished, TurnStats
from app.chat.compare_pane import ComparePane
from app.chat.tab import ChatTab
from app.status.gauge import GaugeWidget
from engine.server.options import API_CHAT_PREFIX

_NO_STATS = TurnStats(0, 0, 0, 0.0, 0.0, 0.0)


class ChatRouter(QObject):
    """`tabs` and `panes` by chat id, and the bridge's per-chat signals sent on to them."""

    def __init__(self, bridge: EngineBridge, gauge: GaugeWidget, chat_tabs: Callable[[], list[ChatTab]],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._gauge, self._chat_tabs = gauge, chat_tabs
        self.tabs: dict[str, ChatTab] = {}
        self.panes: dict[str, ComparePane] = {}  # Compare's panes (app/window/compare.py)
        route = self._route
        bridge.token_received.connect(lambda chat_id, text: route(chat_id, ChatTab.on_token, text))
        bridge.reasoning_received.connect(lambda chat_id, text: route(chat_id, ChatTab.on_reasoning, text))
        bridge.turn_finished.connect(lambda event: route(event.chat_id, ChatTab.on_turn_finished, event))
        bridge.chat_error.connect(lambda chat_id, message: route(chat_id, ChatTab.on_chat_error, message))
        bridge.stats_updated.connect(self._on_stats)
        bridge.engine_failed.connect(self._on_engine_failed)

    def title_of(self, chat_id: str) -> str:
        """What the gauge calls a chat: its tab's title."""
        tab = self.tabs.get(chat_id)
        if tab is None and chat_id.startswith(API_CHAT_PREFIX):
            return "API request"
        return tab.title if tab else "closed chat"

    def _route(self, chat_id: str, handler: Callable[..., None], *args: object) -> None:
        """Events for one chat go to its tab; late events for a closed tab are dropped."""
        if (tab := self.tabs.get(chat_id)) is not None:
            handler(tab, *args)
        elif (pane := self.panes.get(chat_id)) is not None:
            getattr(pane, handler.__name__)(*args)  # a Compare pane answers to the same names

    def _on_stats(self, stats: EngineStats) -> None:
        self._gauge.update_stats(stats)
        speeds = dict(stats.chat_tokens_per_second)
        for chat_id, tab in self.tabs.items():
            if tab.answering:
                tab.on_stats(speeds.get(chat_id, 0.0))
        for chat_id, pane in self.panes.items():
            if pane.answering:
                pane.on_stats(speeds.get(chat_id, 0.0))

    def _on_engine_failed(self, _message: str) -> None:
        """Every answering tab ends its turn: the engine that would have finished it is gone."""
        for tab in self._chat_tabs():
            if tab.answering:
                tab.on_turn_finished(TurnFinished(tab.chat_id, "error", _NO_STATS, "", ""))
