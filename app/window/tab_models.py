"""Each tab's model: the picker in its header, loading the chosen model beside the others, and what the tab says.

A tab that never chose follows the window's model (the settings' one: app/window/model_lifecycle.py); a
tab that chose one names it in every Submit (the bridge's chat models) and waits only for that model: its
loading, failure or unloading is said in that tab alone, while the other tabs keep streaming. A new tab
starts on the model chosen last. The library the pickers list is looked for once, off the GUI thread,
the first time a picker (or Compare…) is opened.
"""

from __future__ import annotations

import threading
from typing import Callable, Mapping

from PySide6.QtCore import QObject, Signal, Slot

from app.bridge import EngineBridge, ModelConfig, ModelInfo
from app.chat.model_picker import display_name
from app.chat.tab import ChatTab
from app.misc.thread_relay import emit_from_thread
from app.models.library import LibraryModel, config_for_path, find_library
from app.window.model_lifecycle import ModelLifecycle
from engine.protocol import ModelUnloaded

Tabs = Callable[[], list[ChatTab]]
Finder = Callable[[], list[LibraryModel]]


class TabModels(QObject):
    library_changed = Signal()
    _found = Signal(object)  # the scan's result, handed to the GUI thread (thread_relay.py)

    def __init__(self, bridge: EngineBridge, lifecycle: ModelLifecycle, tabs: Tabs, base_config: Callable[[], ModelConfig],
                 keep_alive_s: Callable[[], float | None], recent: Callable[[], list[str]],
                 parent: QObject | None = None, projectors: Callable[[], Mapping[str, str]] = dict,
                 draft_models: Callable[[], Mapping[str, str]] = dict) -> None:
        super().__init__(parent)
        self.bridge, self.lifecycle, self._tabs = bridge, lifecycle, tabs
        self._base_config, self._keep_alive_s, self._recent = base_config, keep_alive_s, recent
        self._projectors = projectors  # model path -> the vision projector chosen for it in the settings
        self._draft_models = draft_models  # model path -> the draft model chosen for it in the settings
        self.library: list[LibraryModel] = []
        self.last_chosen = ""  # a new tab starts on it ("" : the window's model)
        self.finder: Finder | None = None  # None: the real library (engine/catalog), found on first use
        self._looked = False
        self._problems: dict[str, str] = {}  # path -> why it is not loaded (failed, unloaded on request)
        self._resting: dict[str, str] = {}  # path -> unloaded while idle or for room: the next send loads it again
        self._found.connect(self._on_found)
        bridge.model_loading_at.connect(lambda path, *_: self._refresh_path(path))
        bridge.model_loaded.connect(self._on_loaded)
        bridge.model_failed_at.connect(self._on_failed)
        bridge.model_unloaded.connect(self._on_unloaded)

    # ------------------------------------------------------------ tabs

    def attach(self, tab: ChatTab) -> None:
        """A new tab: its picker lists the library; it starts on the model chosen last."""
        tab.model_picker.opening.connect(self.look_for_models)
        tab.model_chosen.connect(lambda _chat_id, path, tab=tab: self.choose(tab, path))
        self._fill(tab)
        if self.last_chosen:
            tab.set_model_path(self.last_chosen)
        self.follow(tab)

    def default_path(self) -> str:
        config = self.lifecycle.model_config
        return config.path if config is not None else ""

    def path_of(self, tab: ChatTab) -> str:
        return tab.model_path or self.default_path()

    def follow(self, tab: ChatTab) -> None:
        """Tell the bridge which model the tab's turns go to, and show the tab's readiness."""
        path = self.path_of(tab)
        if path:
            self.bridge.set_chat_model(tab.chat_id, path)
        if not tab.model_path:
            tab.model_picker.set_path(path)
            tab.set_model_ready(self.lifecycle.reason == "", self.lifecycle.reason, waiting=self.lifecycle.waiting)
        else:
            tab.set_model_ready(*self.readiness(path), waiting=path in self.bridge.loading_models)

    def choose(self, tab: ChatTab, path: str) -> None:
        """The user picked `path` for this tab: load it beside the others unless it is loaded or loading."""
        self.last_chosen = path
        self._problems.pop(path, None)
        self._resting.pop(path, None)
        if path not in self.bridge.loaded_models and path not in self.bridge.loading_models:
            if path != self.default_path():
                self.lifecycle.elsewhere.add(path)
            self.load(path)
        self.follow(tab)

    def load(self, path: str) -> None:
        config = config_for_path(self._base_config(), path, self._projectors(), self._draft_models())
        self.bridge.load_model(config, self._keep_alive_s())

    def readiness(self, path: str) -> tuple[bool, str]:
        name = self.name_of(path)
        if path in self.bridge.loading_models:
            return False, f"Loading {name}… {int(self.bridge.loading_models[path] * 100)}%"
        if path in self.bridge.loaded_models:
            return True, ""
        if path in self._problems:
            return False, self._problems[path]
        if path in self._resting:
            return True, self._resting[path]
        return False, f"{name} is not loaded. Choose it above to load it."

    def name_of(self, path: str) -> str:
        info = self.bridge.loaded_models.get(path)
        if info is not None:
            return info.name
        return next((model.name for model in self.library if model.path == path), display_name(path))

    def refresh(self) -> None:
        for tab in self._tabs():
            self.follow(tab)

    def _refresh_path(self, path: str) -> None:
        for tab in self._tabs():
            if self.path_of(tab) == path:
                self.follow(tab)

    # ------------------------------------------------------------ what the engine says

    def _on_loaded(self, info: ModelInfo) -> None:
        self._problems.pop(info.path, None)
        self._resting.pop(info.path, None)
        self._fill_all()
        self._refresh_path(info.path)

    def _on_failed(self, path: str, message: str) -> None:
        self._problems[path] = f"{self.name_of(path)} could not be loaded: {message} Choose another model above."
        self._refresh_path(path)

    def _on_unloaded(self, event: ModelUnloaded) -> None:
        why = event.message or f"{self.name_of(event.path)} was unloaded ({event.reason})."
        if event.reason in ("idle", "room"):  # the bridge loads it again when a tab on it sends
            self._resting[event.path] = f"{why} It loads again when you send."
        else:
            self._problems[event.path] = f"{why} Choose it above to load it again."
        self._fill_all()
        self._refresh_path(event.path)

    # ------------------------------------------------------------ the library

    def look_for_models(self) -> None:
        """Find the library once (a thread); the pickers fill in when it returns."""
        if self._looked:
            return
        self._looked = True
        if self.finder is not None:
            self._on_found(self.finder())
            return
        recent, base, projectors, drafts = (list(self._recent()), self._base_config(), dict(self._projectors()),
                                            dict(self._draft_models()))

        def find() -> None:
            emit_from_thread(self, "_found", find_library(recent, base, projectors, drafts))

        threading.Thread(target=find, name="hearth-model-library", daemon=True).start()

    def set_library(self, models: list[LibraryModel]) -> None:
        self._looked = True
        self._on_found(models)

    @Slot(object)
    def _on_found(self, models: list[LibraryModel]) -> None:
        self.library = list(models)
        self._fill_all()
        self.library_changed.emit()

    def _fill_all(self) -> None:
        for tab in self._tabs():
            self._fill(tab)

    def _fill(self, tab: ChatTab) -> None:
        tab.model_picker.set_models(self.library, self.bridge.loaded_models.keys())
