"""The model's life cycle as the window shows it: asked for, loading, answering, failed, engine stopped.

The window shows first and loads the model afterwards, so it opens fast; while
no model is ready `readiness_changed` tells every tab why. A load that fails
keeps the model that answers (the engine keeps it too). If the engine itself
stops, a banner offers Restart engine. The widgets (`label`, `progress`,
`banner`) are made here and placed by the window.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QProgressBar, QPushButton

from app.bridge import EngineBridge, ModelConfig, ModelInfo

SHORT_STATUS_CHARS = 60  # a longer reason shows whole in the tabs, its head in the status bar


def file_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


class ModelLifecycle(QObject):
    """Which model is asked for, which one answers, and what to say meanwhile."""

    readiness_changed = Signal(bool, str)  # the tabs can send; if not, why
    loaded = Signal(object)  # ModelInfo: this model answers now
    lost = Signal()  # no model answers any more

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.model_config: ModelConfig | None = None  # asked for (loading or loaded)
        self.config_in_effect: ModelConfig | None = None  # the one actually answering
        self.elsewhere: set[str] = set()  # paths loaded for one tab's own choice (app/window/tab_models.py)
        self.reason = "Starting…"  # why the tabs cannot send ("" when they can)
        self.waiting = True  # the model is on its way (starting, loading): the tabs take messages and queue them
        self.label = QLabel()
        self.progress = QProgressBar(maximum=100, textVisible=False)
        self.progress.setFixedWidth(120)
        self.progress.hide()
        self.banner, self.banner_label = self._build_banner()
        # Only the window's own model (the one new chats start on); a tab's other model is app/window/tab_models.py's.
        bridge.model_loading_at.connect(self._on_loading_at)
        bridge.model_loaded.connect(self._on_loaded_any)
        bridge.model_failed_at.connect(self._on_failed_at)
        bridge.engine_failed.connect(self._on_engine_failed)

    def _build_banner(self) -> tuple[QFrame, QLabel]:
        banner = QFrame()
        banner.setObjectName("engineBanner")  # styled in resources/style.qss
        label = QLabel()
        label.setWordWrap(True)
        restart = QPushButton("Restart engine")
        restart.clicked.connect(self.restart_engine)
        row = QHBoxLayout(banner)
        row.addWidget(label, 1)
        row.addWidget(restart)
        banner.hide()
        return banner, label

    # ------------------------------------------------------------ what the window asks

    def load(self, config: ModelConfig) -> None:
        self.model_config = config
        self._set_state(False, f"Loading {file_name(config.path)}…", waiting=True)
        self.bridge.load_model(config)

    def _mine(self, path: str) -> bool:
        """An event about the window's own model, not about one a tab loaded for itself (`elsewhere`)."""
        return path not in self.elsewhere or (self.model_config is not None and self.model_config.path == path)

    def _on_loading_at(self, path: str, fraction: float, message: str) -> None:
        if self._mine(path):
            self._on_model_loading(fraction, message)

    def _on_loaded_any(self, info: ModelInfo) -> None:
        if self._mine(info.path):
            self._on_model_loaded(info)

    def _on_failed_at(self, path: str, message: str) -> None:
        if self._mine(path):
            self._on_model_load_failed(message)

    def set_unavailable(self, reason: str) -> None:
        """There is no model to load; `reason` says what to do."""
        self._set_state(False, reason)

    def restart_engine(self) -> None:
        self.banner.hide()
        self._set_state(False, "Restarting the engine…", waiting=True)
        self.bridge.restart()

    def _set_state(self, ready: bool, reason: str, waiting: bool = False) -> None:
        self.reason = "" if ready else reason
        self.waiting = waiting and not ready
        self.label.setText(reason.split(":")[0] if len(reason) > SHORT_STATUS_CHARS else reason)
        self.readiness_changed.emit(ready, self.reason)

    # ------------------------------------------------------------ what the engine says

    def _on_model_loading(self, fraction: float, message: str) -> None:
        percent = int(fraction * 100)
        self.progress.setValue(percent)
        self.progress.show()
        name = file_name(self.model_config.path if self.model_config else "")
        self._set_state(False, f"Loading {name}… {percent}%{' — ' + message if message else ''}", waiting=True)

    def _on_model_loaded(self, info: ModelInfo) -> None:
        self.config_in_effect = self.model_config
        self.progress.hide()
        self._set_state(True, "")
        self.loaded.emit(info)

    def _on_model_load_failed(self, message: str) -> None:
        self.progress.hide()
        previous = self.config_in_effect
        info = self.bridge.loaded_models.get(previous.path) if previous is not None else None
        if info is not None:  # the previous model is still loaded and answering
            self.model_config = self.config_in_effect
            self._set_state(True, "")
            self.label.setText(f"Kept {info.name}: {message}")
            return
        self.lost.emit()
        self._set_state(False, f"No model loaded: {message} Choose another model in Model > Settings…")

    def _on_engine_failed(self, message: str) -> None:
        self.banner_label.setText(f"The engine stopped. {message.splitlines()[0]}")
        self.banner.show()
        self.lost.emit()
        self._set_state(False, "The engine stopped: use Restart engine above.")
