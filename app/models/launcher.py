"""What the window holds of Get models: the download manager, the status-bar indicator, the dialog.

The window places `indicator` in its status bar, calls `open()` from the menu
(and from Settings), and hears `model_config_chosen` when a verified download is
to be loaded: "Use this model" makes it the settings' model first. The manager
outlives the dialog, so a download goes on when the dialog closes. Its Voice models… button opens Get
voice models, whose Use makes the chosen model Settings > Voice's speech model or voice.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QWidget

from app.models.dialog import GetModelsDialog
from app.models.downloads import DownloadManager, Downloaded
from app.models.indicator import DownloadIndicator
from app.models.voice_dialog import VoiceModelsDialog
from app.settings.store import Settings, model_config
from engine.protocol import ModelConfig


class GetModels(QObject):
    model_config_chosen = Signal(object)  # ModelConfig: the downloaded model, to load now
    downloaded = Signal(object)  # Downloaded: a new model is in the cache (lists of models may refresh)

    def __init__(self, window: QWidget, settings: Settings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.window = window
        self.settings = settings
        self.downloads = DownloadManager(self)
        self.indicator = DownloadIndicator(self.downloads)
        self.dialog: GetModelsDialog | None = None
        self.voice_dialog: VoiceModelsDialog | None = None  # the last one opened
        self._config = ModelConfig(path="")
        self.indicator.clicked.connect(lambda: self.open(self._config))
        self.downloads.finished.connect(self.downloaded.emit)

    def open(self, config: ModelConfig) -> GetModelsDialog:
        """Show the dialog (the one already open, if any) for the user's context and parallel chats."""
        self._config = config
        if self.dialog is not None:
            self.dialog.raise_()
            self.dialog.activateWindow()
            return self.dialog
        dialog = GetModelsDialog(self.downloads, config, self.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.draft_chosen.connect(self._on_draft_chosen)
        dialog.projector_chosen.connect(self._on_projector_chosen)
        dialog.model_chosen.connect(self._on_model_chosen)
        dialog.voice_models_requested.connect(self.open_voice_models)
        dialog.finished.connect(self._on_dialog_finished)
        self.dialog = dialog
        dialog.show()
        return dialog

    def _on_model_chosen(self, path: str, backend: str, quantization: str) -> None:
        self.settings.set("model.path", path)
        self.settings.set("model.backend", backend)
        self.settings.set("model.quantization", quantization)
        self.settings.add_recent(path)
        self.settings.save()
        self.model_config_chosen.emit(model_config(self.settings))

    def open_voice_models(self) -> VoiceModelsDialog:
        """Get voice models; Use makes the chosen one the speech model or the voice of Settings > Voice."""
        dialog = VoiceModelsDialog(self.dialog or self.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.chosen.connect(self._on_voice_model_chosen)
        dialog.show()
        self.voice_dialog = dialog
        return dialog

    def _on_voice_model_chosen(self, kind: str, path: str) -> None:
        self.settings.set("voice.stt_model" if kind == "speech to text" else "voice.tts_voice", path)
        self.settings.save()

    def _on_draft_chosen(self, model_path: str, draft_path: str) -> None:
        """Downloaded with the model: its draft model from now on, as if chosen in Settings > Draft model."""
        self.settings.set("model.draft_models", {**self.settings.get("model.draft_models"), model_path: draft_path})

    def _on_projector_chosen(self, model_path: str, projector_path: str) -> None:
        """Picked in Get models: its vision projector from now on, as if chosen in Settings > Vision projector."""
        self.settings.set("model.projectors", {**self.settings.get("model.projectors"), model_path: projector_path})

    def _on_dialog_finished(self, _result: int) -> None:
        self.dialog = None

    def shutdown(self) -> None:
        """The window closes: a running download stops (what arrived is kept for next time)."""
        if self.dialog is not None:
            self.dialog.close()
        self.downloads.shutdown()


__all__ = ["Downloaded", "GetModels"]
