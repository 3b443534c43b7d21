"""The settings dialog: model, backend, quantization, device, context, sampling, and a live memory estimate.

Independent of the engine bridge: Apply saves the settings and emits
`model_config_applied(ModelConfig)` when the model must be (re)loaded,
`sampling_applied(SamplingParams, system_prompt)`, and `server_applied(options)`
(ServerOptions, or None for off) when the local API changed; the main window
connects them.
It opens at once with the settings' model described; finding the other models and
probing the machine (GPUs, llama.cpp's build) run off the GUI thread and fill in
when they return (`scanning` is True until then). Its parts, on pages (pages.py) so that
a small screen reaches all of them: the model column (model_list.py), the options and
what can work here (form.py), the local API (server_section.py), the tools' limits
(tools_section.py; `tools_requested` asks the window for the Tools window); under the
pages, on every page, the estimate (memory_section.py draws it; dialog_estimate.py works it out).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from PySide6.QtCore import QRect, Signal
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QVBoxLayout, QWidget

from app.settings.capabilities import Capabilities, probe_capabilities
from app.settings.dialog_estimate import device_memory, dialog_estimate
from app.settings.documents_section import DocumentsSection
from app.settings.form import SettingsForm
from app.settings.memory_section import MemorySection
from app.settings.model_list import ModelList
from app.settings.model_scan import ModelScan, ScanResult, scan_machine
from app.settings.models_options import default_budget_bytes, engine_options
from app.settings.models_section import ModelsSection
from app.settings.pages import SettingsPages, fit_size
from app.settings.server_section import ServerSection
from app.settings.store import Settings, engine_inputs, remote_config, server_options
from app.settings.tools_section import ToolsSection
from app.settings.voice_section import VoiceSection
from engine.catalog.default_model import default_model_path
from engine.catalog.description import ModelDescription, ModelEntry
from engine.catalog.devices import DeviceMemory, system_memory
from engine.catalog.memory import Estimate, Verdict
from engine.protocol import ModelConfig

Scan = Callable[[], ScanResult]
SCANNING_HINT = "Looking for models and GPUs…"
DEVICE_PAGE = "Device and context"
ESTIMATE_PAGES = ("Model", DEVICE_PAGE, "Several models", "Documents")  # a GGUF embedding model counts too
REMOTE_MEMORY = "The remote server holds the model and its KV cache: nothing is loaded on this computer."


class Section(Protocol):
    def load(self, settings: Settings) -> None: ...
    def collect(self, target: Settings) -> None: ...


class SettingsDialog(QDialog):
    model_config_applied = Signal(object)  # ModelConfig: load this model
    sampling_applied = Signal(object, str)  # SamplingParams, system prompt: for new turns
    server_applied = Signal(object)  # ServerOptions, or None: the local API is off
    get_models_requested = Signal()  # the Get models… button: the window opens that dialog
    tools_requested = Signal()  # Servers and tools…: the window opens the Tools window
    engine_options_applied = Signal(object)  # EngineOptions: the budget and keep-alive of several models

    def __init__(self, settings: Settings, parent: QWidget | None = None, *,
                 entries: list[ModelEntry] | None = None, capabilities: Capabilities | None = None,
                 ram: DeviceMemory | None = None, loaded: ModelConfig | None = None, scan: Scan | None = None) -> None:
        """`loaded`: the config in effect now (default: the settings' own); Apply reloads only on a change.

        With both `entries` and `capabilities` given nothing is scanned; otherwise `scan` (default: the
        bundled model, recent ones, the models folder, the HF cache, a deep probe) fills in the rest.
        """
        super().__init__(parent)
        self.setWindowTitle("Hearth settings")
        self.settings = settings
        self.default_path = str(default_model_path() or "")
        self.current_verdict: Verdict | None = None
        self._refreshing = False
        self._applied_config = loaded or engine_inputs(settings, self.default_path)[0]
        self._previous_config = self._applied_config
        self.ram = ram or system_memory()
        self.models = ModelList()
        self.form = SettingsForm(capabilities or probe_capabilities(deep=False), self.ram, self)  # installed, for now
        self.memory = MemorySection()
        self.server = ServerSection()
        self.several = ModelsSection(default_budget_bytes(self._applied_config))
        self.tools = ToolsSection()
        self.documents = DocumentsSection()
        self.voice = VoiceSection()
        self._applied_server = server_options(settings)
        self._build()
        if entries is not None:
            self.models.set_entries(entries)
        self._load_from_settings()
        self.fit_to((parent or self).screen().availableGeometry())  # the screen the window is on
        self.scanning = entries is None or capabilities is None
        if self.scanning:
            self._start_scan(scan, keep_entries=entries is not None, keep_capabilities=capabilities is not None)

    def _build(self) -> None:
        self.pages = SettingsPages()
        self.pages.add_page("Model", self.models, self.form.backend_group, self.form.remote, stretch_first=True)
        self.pages.add_page(DEVICE_PAGE, self.form.device_group)
        for name, section in (("Sampling", self.form.sampling_group), ("Several models", self.several),
                              ("Local API", self.server), ("Tools", self.tools), ("Documents", self.documents),
                              ("Voice", self.voice)):
            self.pages.add_page(name, section)
        self.pages.names.currentRowChanged.connect(self._on_page_changed)
        layout = QVBoxLayout(self)
        layout.addWidget(self.pages, 1)
        layout.addWidget(self.memory)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Apply
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self._on_ok)
        self.buttons.rejected.connect(self.reject)
        self.buttons.button(QDialogButtonBox.StandardButton.Apply).clicked.connect(self.apply)
        layout.addWidget(self.buttons)
        self.models.model_selected.connect(self._on_model_selected)
        self.models.get_models_requested.connect(self.get_models_requested.emit)
        self.tools.tools_requested.connect(self.tools_requested.emit)
        self.form.changed.connect(self._refresh)
        self.documents.mode_combo.currentIndexChanged.connect(self._refresh)  # its embedding model counts too
        self.documents.model_edit.editingFinished.connect(self._refresh)

    def _on_page_changed(self, index: int) -> None:
        """The estimate goes with the pages that change it; the others get its height."""
        self.memory.setVisible(self.pages.page_names()[index] in ESTIMATE_PAGES if index >= 0 else True)

    def fit_to(self, available: QRect) -> None:
        """The size at which no page scrolls, or as much of it as a screen of this available geometry shows."""
        self.resize(fit_size(self.sizeHint(), available))

    @property
    def capabilities(self) -> Capabilities:
        return self.form.capabilities

    @property
    def description(self) -> ModelDescription | None:
        """The chosen model, as read from its file or folder."""
        return self.models.description

    def open_model(self, path: str) -> bool:
        """Describe and choose a GGUF file or HF folder; on failure say why under the list."""
        return self.models.open_model(path)

    # ------------------------------------------------------------ the scan

    def _start_scan(self, scan: Scan | None, keep_entries: bool, keep_capabilities: bool) -> None:
        recent = self.settings.get("model.recent")
        self._keep = keep_entries, keep_capabilities
        self.models.set_hint(SCANNING_HINT)
        job = ModelScan(scan or (lambda: scan_machine(recent)))
        job.finished.connect(self._on_scanned)
        job.start()

    def rescan(self, *_new: object) -> None:
        """Look for models again (a download finished): the list gains it, the choice stays."""
        self._start_scan(None, keep_entries=False, keep_capabilities=True)

    def _on_scanned(self, result: ScanResult) -> None:
        keep_entries, keep_capabilities = self._keep
        self.scanning = False
        self.models.set_hint(result.error)
        if not keep_capabilities:
            self.form.set_capabilities(result.capabilities)
        if not keep_entries:
            self.models.set_entries(result.entries)
        self._refresh()

    # ------------------------------------------------------------ the model and the estimate

    def _on_model_selected(self, model: ModelDescription | None) -> None:
        if model is not None:
            self.form.show_model(model)
        self._refresh()

    def _refresh(self) -> None:
        if self._refreshing:
            return  # availability changes set widgets, which call back here
        self._refreshing = True
        try:
            self.form.update_availability(self.description)
            self.models.setEnabled(not self.form.remote_chosen)  # the server has its own model list
            self.pages.set_page_hidden(self.pages.page_names().index(DEVICE_PAGE), self.form.remote_chosen)
            self._show_estimate()
        finally:
            self._refreshing = False

    def current_config(self) -> ModelConfig:
        scratch = Settings(self.settings.path, self.settings.as_dict())
        self._collect(scratch)
        if self.form.remote_chosen:
            return remote_config(scratch, self.form.remote.api_key)
        return engine_inputs(scratch, self.default_path)[0]

    def current_estimate(self) -> Estimate | None:
        """What the dialog's choices would take (dialog_estimate.py); None without a model or for a remote one."""
        if self.description is None:
            return None
        return dialog_estimate(self.description, self.current_config(), self.form.on_gpu(), self.ram.total_bytes,
                               self.documents.mode_combo.currentData(), self.documents.model_edit.text())

    def _show_estimate(self) -> None:
        result = self.current_estimate()
        if result is None:
            self.memory.clear()
            if self.form.remote_chosen:
                self.memory.breakdown_label.setText(REMOTE_MEMORY)
            self.form.kv_note_label.clear()
            self.current_verdict = None
            return
        self.current_verdict = self.memory.show_estimate(result, device_memory(result, self.capabilities.gpus, self.ram))
        self.form.kv_note_label.setText(result.kv_explanation())

    # ------------------------------------------------------------ settings in and out

    def _sections(self) -> tuple[Section, ...]:
        """What reads its widgets from the settings and writes them back, in that order."""
        return self.form, self.server, self.several, self.tools, self.documents, self.voice

    def _load_from_settings(self) -> None:
        for section in self._sections():
            section.load(self.settings)
        path = self.settings.get("model.path") or self.default_path
        if path and not self.open_model(path) and self.models.list.count():
            self.models.list.setCurrentRow(0)
        self.form.finish_load(self.settings)
        self._refresh()

    def _collect(self, target: Settings) -> None:
        path = self.description.path if self.description is not None else ""
        target.set("model.path", "" if path == self.default_path else path)
        for section in self._sections():
            section.collect(target)

    def _problems_shown(self) -> bool:
        """Show every section's problem where it is; turn to the first one's page. True when there is one."""
        remote_problem = self.form.remote.problem(self.form.remote_chosen)
        if remote_problem:
            self.form.remote.result_label.setText(remote_problem)
        found: list[QWidget] = [self.form.remote.result_label] if remote_problem else []
        for section in (self.several, self.server, self.documents, self.voice):
            problem = section.problem()
            section.show_problem(problem)
            if problem:
                found.append(section.problem_label)
        if found:
            self.pages.reveal(found[0])
        return bool(found)

    def apply(self) -> bool:
        """Save, then tell the window: a new ModelConfig only when the model must reload.

        Returns False, saving nothing, while a section has a problem to fix (its page is shown)."""
        if self._problems_shown():
            return False
        self.form.remote.save_key()  # before the config is built: it carries the key to the engine
        self.server.save_key()  # likewise for the server's options
        self._collect(self.settings)
        if self.description is not None:
            self.settings.add_recent(self.description.path)
        self.settings.save()
        config, sampling, prompt = engine_inputs(self.settings, self.default_path)
        self.sampling_applied.emit(sampling, prompt)
        self.engine_options_applied.emit(engine_options(self.settings, config))
        if config != self._applied_config:
            self._previous_config, self._applied_config = self._applied_config, config
            self.models.error_label.clear()
            self.model_config_applied.emit(config)
        server = server_options(self.settings)
        if server != self._applied_server:
            self._applied_server = server
            self.server_applied.emit(server)
        return True

    def show_server_error(self, message: str) -> None:
        """The API could not start with what was applied (a port in use...): say so here, and let Apply retry."""
        self.server.show_problem(message)
        self.pages.reveal(self.server.problem_label)
        self._applied_server = None

    def show_load_error(self, message: str) -> None:
        """The applied model failed to load and the old one stays: say why, and let Apply try again."""
        self.models.error_label.setText(message)
        self.pages.reveal(self.models.error_label)
        self._applied_config = self._previous_config

    def _on_ok(self) -> None:
        if self.apply():
            self.accept()
