"""The main window: chat tabs, menus and shortcuts, the gauge, the history, and the dialogs.

The window makes its parts, opens and closes the tabs, and owns helpers for what changes for its
own reasons: engine events go to the tab whose chat id they carry (app/window/chat_routing.py);
what the settings give the engine, the model and new chats, at the start and from the Settings
dialog, is app/window/applied_settings.py's; Compare's opening app/window/compare_launch.py's;
the model's life cycle (loading, failing, the engine banner) app/window/model_lifecycle.py's;
the local API server, on the same engine, app/window/api_server.py's; where the parts sit
app/window/window_layout.py's. The window is the TabHost the history works through
(app/history/sync.py) and the WindowCommands the menus call (app/window/menus.py).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import TYPE_CHECKING, Any, Sequence

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QShowEvent
from PySide6.QtWidgets import QMainWindow, QWidget

from app.bridge import ChatMessage, EngineBridge, ModelConfig, ModelInfo, SamplingParams
from app.chat.markdown_view import warm_up
from app.chat.tab import ChatTab
from app.history import dialog as history_dialogs
from app.history.sync import HistoryUI
from app.models.launcher import GetModels
from app.settings.models_options import keep_alive_s
from app.settings.store import Settings
from app.status.gauge import GaugeWidget
from app.status.server_indicator import ServerIndicator
from app.tools.memory_switch import add_memory_switch
from app.tools.service import ToolService
from app.window.api_server import ApiServerControl
from app.window.applied_settings import AppliedSettings
from app.window.chat_routing import ChatRouter
from app.window.compare_launch import CompareLauncher
from app.window.menus import build_menus
from app.window.model_lifecycle import ModelLifecycle
from app.window.sidebar_control import SidebarControl
from app.window.tab_models import TabModels
from app.window.tabwidget import ChatTabWidget
from app.window.view_commands import ViewCommands
from app.window.welcome import welcome_text
from app.window.window_layout import arrange_window

if TYPE_CHECKING:
    from app.history.records import ChatSnapshot
    from app.quantcheck.dialog import QuantCheckDialog
    from app.settings.tools_dialog import ToolsDialog
    from app.settings.dialog import SettingsDialog
    from app.window.compare import CompareDialog


class MainWindow(QMainWindow):
    """Hooks for others: `chat_opened` / `chat_closed`, `shown`, and the TabHost methods."""

    chat_opened = Signal(object)  # ChatTab
    chat_closed = Signal(str)  # chat_id
    shown = Signal()  # the first time the window is on screen
    router: ChatRouter  # made once the bridge's other listeners are (see __init__); the gauge asks it for titles

    def __init__(self, bridge: EngineBridge | None = None, model_path: str | None = None) -> None:
        super().__init__()
        self.setWindowTitle("Hearth")
        self.resize(1000, 720)
        self.bridge = bridge or EngineBridge(self, stats_interval_s=0.25)
        self.settings = Settings.load()  # a small JSON file; a bad one is replaced, with a message
        self.applied = AppliedSettings(self, self, model_path)  # what the settings give the engine and new chats
        self._settings_dialog: SettingsDialog | None = None
        self._quantcheck_dialog: QuantCheckDialog | None = None  # kept: its results stay for the next look
        self._tools_dialog: ToolsDialog | None = None  # the last one opened (it closes itself)
        _, self.default_sampling, self.system_prompt = self.applied.engine_inputs()
        self.tool_service = ToolService(self.settings, self)  # MCP servers start when a chat first needs them
        self._chat_count = 0
        self._started = False
        self.gauge = GaugeWidget(lambda chat_id: self.router.title_of(chat_id), self)
        self.api_indicator = ServerIndicator(self)
        self.api = ApiServerControl(self.bridge, self.api_indicator, self.gauge, self.statusBar(), self)
        self.model = ModelLifecycle(self.bridge, self)
        self.model.readiness_changed.connect(self._on_readiness_changed)
        self.model.loaded.connect(self._on_model_loaded)
        self.model.lost.connect(lambda: self.gauge.set_model(None))
        self.tab_models = TabModels(self.bridge, self.model, self.chat_tabs, lambda: self.applied.engine_inputs()[0],
                                    lambda: keep_alive_s(self.settings), lambda: self.settings.get("model.recent"), self,
                                    projectors=lambda: self.settings.get("model.projectors"),
                                    draft_models=lambda: self.settings.get("model.draft_models"))
        self.gauge.model_infos = lambda: self.bridge.loaded_models
        self.tabs = ChatTabWidget(self)
        self.tabs.new_tab_requested.connect(lambda: self.new_chat())
        self.tabs.tabCloseRequested.connect(self.close_chat)
        self.tabs.tab_renamed.connect(self._on_tab_renamed)
        self.get_models = GetModels(self, self.settings, parent=self)
        self.get_models.model_config_chosen.connect(self.applied.apply_model_config)
        central = arrange_window(self, self.model.banner, self.tabs, (self.model.label, self.model.progress),
                                 (self.api_indicator, self.get_models.indicator, self.gauge))
        self.router = ChatRouter(self.bridge, self.gauge, self.chat_tabs, self)  # engine events to their tab
        self._tabs_by_chat, self._panes_by_chat = self.router.tabs, self.router.panes
        self.history_ui = HistoryUI(self, parent=self)  # saves every chat; restores the open tabs when read
        self._connect_history()  # after the bridge: the tabs hear engine events first
        self.sidebar = SidebarControl(self.history_ui, self.settings, central, self.tabs, self)
        self.chat_opened.connect(self.sidebar.attach)
        self.chat_closed.connect(lambda _chat_id: self.sidebar.sidebar.refresh_soon())
        self.compare = CompareLauncher(self.bridge, self.tab_models, self._defaults, self._panes_by_chat, self.history_ui,
                                       self.new_chat, self.sidebar.sidebar.refresh_soon, self)
        self.view_commands = ViewCommands(self, self)  # the View menu's, and the font size
        build_menus(self, self, self.view_commands)
        self.memory_switch = add_memory_switch(self, self.tool_service.builtin, self._current_chat_id)
        self.new_chat()

    def _connect_history(self) -> None:
        history, bridge = self.history_ui, self.bridge
        self.statusBar().addWidget(history.label, 1)
        self.chat_opened.connect(history.on_chat_opened)
        self.chat_closed.connect(history.on_chat_closed)
        self.tabs.tabBar().tabMoved.connect(lambda *_: history.save_tabs())
        self.tabs.currentChanged.connect(lambda *_: history.save_tabs())
        bridge.turn_started.connect(lambda event: history.on_turn_started(event.chat_id))
        bridge.token_received.connect(history.on_token)
        bridge.reasoning_received.connect(history.on_reasoning)
        bridge.turn_finished.connect(history.on_turn_finished)
        history.comparison_opened.connect(self.open_comparison)

    # ------------------------------------------------------------ tabs (the history's TabHost too)

    def chat_tabs(self) -> list[ChatTab]:
        return [self.tabs.widget(i) for i in range(self.tabs.count())]  # type: ignore[misc]

    def current_tab(self) -> ChatTab | None:
        return self.tabs.currentWidget()  # type: ignore[return-value]

    def _current_chat_id(self) -> str:
        tab = self.current_tab()
        return tab.chat_id if tab is not None else ""

    def new_chat(self, title: str = "", chat_id: str = "", messages: Sequence[ChatMessage] = ()) -> ChatTab:
        """A new tab; the history passes a stored chat's id and title to reopen it."""
        self._chat_count += 1
        tab = ChatTab(self.bridge, self._defaults, title or f"Chat {self._chat_count}", chat_id=chat_id,
                      tools=self.tool_service, settings=self.settings)
        tab.panel.defaults_saved.connect(self.applied.reload_defaults)
        tab.title_from_user = bool(title)
        if messages:
            tab.set_conversation(messages)
        tab.set_model_ready(self.bridge.model_info is not None and not self.bridge.loading, self.model.reason)
        if self.bridge.model_info is not None:
            tab.set_welcome(welcome_text(self.bridge.model_info))
        self.tab_models.attach(tab)
        tab.compare_requested.connect(lambda _chat_id, tab=tab: self.open_compare(tab))
        tab.answering_changed.connect(lambda busy, tab=tab: self.tabs.set_busy(tab, busy))
        tab.title_changed.connect(lambda title, tab=tab: self.tabs.setTabText(self.tabs.indexOf(tab), title))
        self._tabs_by_chat[tab.chat_id] = tab
        self.tabs.setCurrentIndex(self.tabs.addTab(tab, tab.title))
        tab.input.setFocus()
        self.chat_opened.emit(tab)
        return tab

    def close_chat(self, index: int) -> None:
        """Closing a tab that is answering cancels it and frees its slot in the engine."""
        tab = self.tabs.widget(index)
        if not isinstance(tab, ChatTab):
            return
        self.bridge.close_chat(tab.chat_id)
        if tab.chat_tools is not None:
            tab.chat_tools.close()  # nor is a turn sent later that waited for its tool servers
        self._tabs_by_chat.pop(tab.chat_id, None)
        self.tabs.set_busy(tab, False)
        self.tabs.removeTab(index)
        tab.deleteLater()
        self.chat_closed.emit(tab.chat_id)
        if self.tabs.count() == 0:
            self.new_chat()  # an empty window is a dead end

    def close_tab(self, tab: ChatTab) -> None:
        self.close_chat(self.tabs.indexOf(tab))

    def select_tab(self, tab: ChatTab) -> None:
        self.tabs.setCurrentWidget(tab)

    def chat_record(self) -> tuple[str, dict[str, Any]]:
        info = self.bridge.model_info
        return (info.name if info else ""), dataclasses.asdict(self.default_sampling)

    def close_current_chat(self) -> None:
        self.close_chat(self.tabs.currentIndex())

    def stop_current(self) -> None:
        if self.tabs.rename_editor is not None:
            self.tabs.finish_rename(False)
        elif (tab := self.current_tab()) is not None:
            tab.stop()

    def switch_tab(self, step: int) -> None:
        if self.tabs.count():
            self.tabs.setCurrentIndex((self.tabs.currentIndex() + step) % self.tabs.count())

    def _on_tab_renamed(self, index: int, title: str) -> None:
        tab = self.tabs.widget(index)
        if isinstance(tab, ChatTab):
            tab.rename(title)

    def _defaults(self) -> tuple[SamplingParams, str]:
        return self.default_sampling, self.system_prompt

    # ------------------------------------------------------------ the model

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if not self._started:
            self._started = True
            QTimer.singleShot(0, self._start_engine)  # after the first paint
            QTimer.singleShot(0, self.shown.emit)

    def _start_engine(self) -> None:
        threading.Thread(target=warm_up, name="markdown-warm-up", daemon=True).start()
        self.applied.start_engine()

    def initial_model_config(self) -> ModelConfig | None:
        """The settings' model (or --model), else the bundled default; None when there is none."""
        return self.applied.initial_model_config()

    def _on_readiness_changed(self, _ready: bool, _reason: str) -> None:
        self.tab_models.refresh()  # tabs on the window's model follow it; a tab's own model says its own

    def _on_model_loaded(self, info: ModelInfo) -> None:
        for tab in self.chat_tabs():
            tab.set_welcome(welcome_text(info))
        self.setWindowTitle(f"Hearth — {info.name}")
        self.gauge.set_model(info)

    # ------------------------------------------------------------ dialogs and commands (see menus.py)

    def open_settings(self) -> None:
        """The settings dialog (app/window/applied_settings.py)."""
        self._settings_dialog = dialog = self.applied.settings_dialog()
        dialog.open()

    def open_compare(self, tab: ChatTab | None = None) -> None:
        """Compare…: the same message to several models side by side, starting from this tab's model."""
        self.compare.open(tab or self.current_tab())

    def open_comparison(self, snapshot: ChatSnapshot) -> None:
        """A stored comparison (chosen in the sidebar), in Compare with its panes."""
        self.compare.open_stored(snapshot, self.current_tab())

    @property
    def compare_dialog(self) -> CompareDialog | None:
        """The Compare dialog open now, if any (app/window/compare_launch.py)."""
        return self.compare.dialog

    def open_tools(self, over: QWidget | None = None) -> None:
        """The built-in tools, the MCP servers and their tools, and the tools always allowed (over the Settings dialog, from there)."""
        from app.settings.tools_dialog import ToolsDialog

        dialog = ToolsDialog(self.tool_service, over or self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self._tools_dialog = dialog
        dialog.open()

    def open_get_models(self) -> None:
        """Get models, sized for the context and parallel chats in the settings."""
        self.get_models.open(self.applied.engine_inputs()[0])

    def show_about(self) -> None:
        from app.misc.about import AboutDialog  # asks llama.cpp for its build: only when wanted

        dialog = AboutDialog(self, self.bridge.model_info)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()

    def show_chat_list(self) -> None:
        history_dialogs.show_chat_list(self.history_ui, self)

    def export_chat(self, kind: str) -> None:
        history_dialogs.export_with_dialog(self.history_ui, kind, self)

    def import_chat(self) -> None:
        history_dialogs.import_with_dialog(self.history_ui, self)

    def cancel_loading(self) -> None:
        self.bridge.cancel_load()

    def show_model_details(self) -> None:
        self.gauge.show_details()

    def check_quantization(self) -> None:
        from app.window.quantcheck_hook import ChatsMakingRoom, open_check  # the check's modules: only when asked

        chats = ChatsMakingRoom(self.bridge, self.model, self.chat_tabs, self.chat_opened)
        self._quantcheck_dialog = open_check(self, self._quantcheck_dialog, chats, self.settings.get("model.recent"))

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        self.api.stop()  # its streams end with a finish reason while the engine still runs
        self.get_models.shutdown()  # a download stops; what arrived stays for the next one
        self.bridge.shutdown()  # joins the engine thread: nothing may emit into a dead window
        self.tool_service.shutdown()  # every MCP server is stopped
        self.history_ui.close()  # writes what streamed, marks unfinished answers interrupted, joins its thread
        self.sidebar.save()  # its width, if it was dragged a moment ago
        super().closeEvent(event)
