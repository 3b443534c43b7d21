"""The settings dialog: model, backend, quantization, device, context, sampling, and a live memory estimate.

Independent of the engine bridge: Apply saves the settings and emits
`model_config_applied(ModelConfig)` when the model must be (re)loaded and
`sampling_applied(SamplingParams, system_prompt)`; the main window connects them.
Options that cannot work on this machine stay visible but disabled, with the reason as tooltip.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QPainter, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFileDialog,
                               QFormLayout, QGroupBox, QHBoxLayout, QLabel, QListWidget, QListWidgetItem,
                               QPlainTextEdit, QPushButton, QSpinBox, QVBoxLayout, QWidget)

from app.settings.store import Settings, engine_inputs
from engine.catalog.default_model import default_model_path
from engine.catalog.memory import DeviceMemory, Estimate, Verdict, cuda_devices, estimate, system_memory, verdict
from engine.catalog.models import ModelDescription, ModelEntry, ModelReadError, describe, discover, format_bytes
from engine.protocol import ModelConfig

PATH_ROLE = Qt.ItemDataRole.UserRole
PART_COLORS = {"weights": QColor("#4e79a7"), "KV cache": QColor("#f28e2b"), "overhead": QColor("#9c755f")}
VERDICT_COLORS = {"fits": "#2e7d32", "tight": "#b26a00", "does not fit": "#c62828"}


@dataclass(frozen=True)
class Capabilities:
    """What this machine and environment can do; probed without importing torch."""

    llama_cpp: bool = True
    llama_cpp_gpu: bool = False
    transformers: bool = False
    bitsandbytes: bool = False
    flash_attn: bool = False
    gpus: tuple[DeviceMemory, ...] = field(default_factory=tuple)


def probe_capabilities() -> Capabilities:
    def has(name: str) -> bool:
        return importlib.util.find_spec(name) is not None

    llama_gpu = False
    if has("llama_cpp"):
        try:
            import llama_cpp  # the engine loads it anyway; asks the build whether it can offload

            llama_gpu = bool(llama_cpp.llama_supports_gpu_offload())
        except Exception:  # a broken build: the engine will report it when loading
            llama_gpu = False
    return Capabilities(has("llama_cpp"), llama_gpu, has("transformers") and has("torch"),
                        has("bitsandbytes"), has("flash_attn"), tuple(cuda_devices()))


class MemoryBar(QWidget):
    """Weights / KV cache / overhead as coloured parts, against the free memory (the line)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.parts: list[tuple[str, int]] = []
        self.free_bytes = 0
        self.setMinimumHeight(22)

    def set_parts(self, parts: list[tuple[str, int]], free_bytes: int) -> None:
        self.parts, self.free_bytes = parts, free_bytes
        self.setToolTip("\n".join(f"{name}: {format_bytes(size)}" for name, size in parts)
                        + f"\nfree: {format_bytes(free_bytes)}")
        self.update()

    def paintEvent(self, event: object) -> None:  # noqa: N802 (Qt's name)
        painter = QPainter(self)
        scale = max(sum(size for _, size in self.parts), self.free_bytes, 1) * 1.05
        painter.fillRect(self.rect(), self.palette().base())
        x = 0.0
        for name, size in self.parts:
            width = self.width() * size / scale
            painter.fillRect(int(x), 0, max(int(width), 1), self.height(), PART_COLORS[name])
            x += width
        painter.setPen(self.palette().text().color())
        free_x = int(self.width() * self.free_bytes / scale)
        painter.drawLine(free_x, 0, free_x, self.height())
        painter.end()


def _item(combo: QComboBox, index: int) -> QStandardItem | None:
    model = combo.model()
    return model.item(index) if isinstance(model, QStandardItemModel) else None


def set_item_enabled(combo: QComboBox, index: int, enabled: bool, reason: str = "") -> None:
    item = _item(combo, index)
    if item is not None:
        item.setEnabled(enabled)
        item.setToolTip("" if enabled else reason)


def item_enabled(combo: QComboBox, index: int) -> bool:
    item = _item(combo, index)
    return item is None or item.isEnabled()


def _combo(pairs: list[tuple[str, str]]) -> QComboBox:
    combo = QComboBox()
    for label, value in pairs:
        combo.addItem(label, value)
    return combo


def _select(combo: QComboBox, value: object) -> None:
    index = combo.findData(value)
    if index >= 0:
        combo.setCurrentIndex(index)


def _spin(low: int, high: int, value: int = 0, special: str = "") -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(low, high)
    spin.setValue(value)
    spin.setSpecialValueText(special)
    return spin


def _double(low: float, high: float, step: float) -> QDoubleSpinBox:
    spin = QDoubleSpinBox()
    spin.setRange(low, high)
    spin.setSingleStep(step)
    spin.setDecimals(2)
    return spin


class SettingsDialog(QDialog):
    model_config_applied = Signal(object)  # ModelConfig: load this model
    sampling_applied = Signal(object, str)  # SamplingParams, system prompt: for new turns

    def __init__(self, settings: Settings, parent: QWidget | None = None, *,
                 entries: list[ModelEntry] | None = None, capabilities: Capabilities | None = None,
                 ram: DeviceMemory | None = None, loaded: ModelConfig | None = None) -> None:
        """`loaded`: the config in effect now (default: the settings' own); Apply reloads only on a change."""
        super().__init__(parent)
        self.setWindowTitle("Hearth settings")
        self.settings = settings
        self.capabilities = capabilities or probe_capabilities()
        self.ram = ram or system_memory()
        self.default_path = str(default_model_path() or "")
        self.description: ModelDescription | None = None
        self._applied_config = loaded or engine_inputs(settings, self.default_path)[0]
        self._previous_config = self._applied_config
        self._build()
        for entry in entries if entries is not None else discover(settings.get("model.recent")):
            self._add_entry(entry)
        self._load_from_settings()

    # ------------------------------------------------------------ building

    def _build(self) -> None:
        columns = QHBoxLayout()
        columns.addLayout(self._build_model_column(), 2)
        right = QVBoxLayout()
        for group in (self._build_backend_group(), self._build_device_group(), self._build_sampling_group()):
            right.addWidget(group)
        columns.addLayout(right, 3)
        layout = QVBoxLayout(self)
        layout.addLayout(columns)
        layout.addWidget(self._build_memory_group())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Apply
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._on_ok)
        buttons.rejected.connect(self.reject)
        buttons.button(QDialogButtonBox.StandardButton.Apply).clicked.connect(self.apply)
        layout.addWidget(buttons)
        for spin, _ in self._spins():
            spin.valueChanged.connect(self._refresh)
        for combo in self.findChildren(QComboBox):
            combo.currentIndexChanged.connect(self._refresh)
        self.double_quant_check.toggled.connect(self._refresh)

    def _build_model_column(self) -> QVBoxLayout:
        column = QVBoxLayout()
        column.addWidget(QLabel("Model"))
        self.model_list = QListWidget()
        self.model_list.setWordWrap(True)  # the metadata line is long; never hide it behind a scrollbar
        self.model_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.model_list.setAlternatingRowColors(True)
        self.model_list.setSpacing(2)
        self.model_list.currentItemChanged.connect(self._on_model_selected)
        column.addWidget(self.model_list, 1)
        row = QHBoxLayout()
        for text, slot in (("Open GGUF file...", self._on_open_gguf), ("Open Hugging Face folder...", self._on_open_folder)):
            button = QPushButton(text)
            button.clicked.connect(slot)
            row.addWidget(button)
        column.addLayout(row)
        self.metadata_label = QLabel()
        self.metadata_label.setWordWrap(True)
        self.metadata_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(f"color: {VERDICT_COLORS['does not fit']}")
        column.addWidget(self.metadata_label)
        column.addWidget(self.error_label)
        return column

    def _build_backend_group(self) -> QGroupBox:
        group = QGroupBox("Backend and quantization")
        form = QFormLayout(group)
        self.backend_combo = _combo([("llama.cpp", "llamacpp"), ("transformers", "hf")])
        self.file_type_label = QLabel()
        self.kv_type_combo = _combo([("f16", "f16"), ("q8_0", "q8_0"), ("q4_0", "q4_0")])
        self.quant_combo = _combo([("none", "none"), ("8-bit (bitsandbytes)", "int8"),
                                   ("4-bit NF4", "nf4"), ("4-bit FP4", "fp4")])
        self.double_quant_check = QCheckBox("double quantization")
        self.dtype_combo = _combo([(name, name) for name in ("auto", "bfloat16", "float16", "float32")])
        self.backend_combo.currentIndexChanged.connect(self._on_backend_changed)
        for label, widget in (("Backend", self.backend_combo), ("File type", self.file_type_label),
                              ("KV cache type", self.kv_type_combo), ("Quantization", self.quant_combo),
                              ("", self.double_quant_check), ("Compute dtype", self.dtype_combo)):
            form.addRow(label, widget)
        self.backend_form = form
        return group

    def _build_device_group(self) -> QGroupBox:
        group = QGroupBox("Device and context")
        form = self.device_form = QFormLayout(group)
        self.device_combo = _combo([("auto", "auto")] + [(gpu.label(), gpu.device) for gpu in self.capabilities.gpus]
                                   + [(self.ram.label(), "cpu")])
        if not self.capabilities.gpus:
            self.device_combo.insertItem(1, "CUDA", "cuda")
        self.gpu_layers_spin = _spin(-1, 999, -1, special="all")
        self.threads_spin = _spin(0, os.cpu_count() or 64, 0, special="automatic")
        self.context_spin = _spin(256, 1 << 20, 4096)
        self.context_spin.setSingleStep(256)
        self.slots_spin = _spin(1, 64, 4)
        self.kv_note_label = QLabel()
        self.kv_note_label.setWordWrap(True)
        self.flash_combo = _combo([("auto", "auto"), ("on", "on"), ("off", "off")])
        for label, widget in (("Device", self.device_combo), ("GPU layers", self.gpu_layers_spin),
                              ("CPU threads", self.threads_spin), ("Context per chat", self.context_spin),
                              ("Parallel chats", self.slots_spin), ("", self.kv_note_label),
                              ("Flash attention", self.flash_combo)):
            form.addRow(label, widget)
        return group

    def _build_sampling_group(self) -> QGroupBox:
        group = QGroupBox("Sampling defaults (a chat may override them)")
        form = QFormLayout(group)
        self.temperature_spin = _double(0.0, 2.0, 0.05)
        self.top_k_spin = _spin(0, 1000, special="off")
        self.top_p_spin = _double(0.0, 1.0, 0.01)
        self.min_p_spin = _double(0.0, 1.0, 0.01)
        self.repeat_penalty_spin = _double(0.5, 2.0, 0.05)
        self.max_new_tokens_spin = _spin(1, 1 << 20)
        self.seed_spin = _spin(-1, 2**31 - 1, special="random")
        self.system_prompt_edit = QPlainTextEdit()
        self.system_prompt_edit.setMaximumHeight(70)
        for label, widget in (("Temperature", self.temperature_spin), ("Top-k", self.top_k_spin),
                              ("Top-p", self.top_p_spin), ("Min-p", self.min_p_spin),
                              ("Repeat penalty", self.repeat_penalty_spin), ("Max new tokens", self.max_new_tokens_spin),
                              ("Seed", self.seed_spin), ("System prompt", self.system_prompt_edit)):
            form.addRow(label, widget)
        return group

    def _build_memory_group(self) -> QGroupBox:
        group = QGroupBox("Memory estimate")
        layout = QVBoxLayout(group)
        self.memory_bar = MemoryBar()
        self.breakdown_label = QLabel()
        self.verdict_label = QLabel()
        self.suggestion_label = QLabel()
        for widget in (self.memory_bar, self.breakdown_label, self.verdict_label, self.suggestion_label):
            layout.addWidget(widget)
        return group

    # ------------------------------------------------------------ models

    def _add_entry(self, entry: ModelEntry) -> QListWidgetItem:
        if entry.description is not None:
            text = f"{entry.description.name}  ({entry.source})\n{entry.description.summary()}"
        else:
            text = f"{os.path.basename(entry.path)}  ({entry.source})\n{entry.error}"
        item = QListWidgetItem(text)
        item.setData(PATH_ROLE, entry.path)
        item.setToolTip(entry.path)
        if entry.description is None:
            item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled)
        self.model_list.addItem(item)
        return item

    def open_model(self, path: str) -> bool:
        """Describe and select a GGUF file or HF folder; on failure say why under the list."""
        try:
            description = describe(path)
        except ModelReadError as error:
            self.error_label.setText(str(error))
            return False
        for row in range(self.model_list.count()):
            if self.model_list.item(row).data(PATH_ROLE) == description.path:
                self.model_list.setCurrentRow(row)
                return True
        self.model_list.setCurrentItem(self._add_entry(ModelEntry(description.path, "Opened", description)))
        return True

    def _on_open_gguf(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open GGUF file", "", "GGUF models (*.gguf);;All files (*)")
        if path:
            self.open_model(path)

    def _on_open_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open Hugging Face model folder")
        if path:
            self.open_model(path)

    def _on_model_selected(self, item: QListWidgetItem | None) -> None:
        self.error_label.clear()
        try:
            self.description = describe(item.data(PATH_ROLE)) if item is not None else None
        except ModelReadError as error:
            self.description = None
            self.error_label.setText(str(error))
        model = self.description
        if model is None:
            self.metadata_label.clear()
            return
        self.metadata_label.setText(
            f"<b>{model.name}</b><br>{model.architecture}, {model.n_params:,} parameters<br>"
            f"{'File type' if model.kind == 'gguf' else 'Weights'}: {model.quantization}, "
            f"{format_bytes(model.file_bytes)} on disk<br>Trained context: {model.trained_context_length:,} tokens<br>"
            f"{model.layers} layers, {model.kv_heads} KV heads x {model.head_dim}")
        self.file_type_label.setText(model.quantization if model.kind == "gguf" else "")
        if model.trained_context_length:
            self.context_spin.setMaximum(model.trained_context_length)  # clamps the value too
        self.gpu_layers_spin.setMaximum(model.layers or 999)
        _select(self.backend_combo, model.default_backend)
        self._refresh()

    # ------------------------------------------------------------ availability

    def _on_backend_changed(self) -> None:
        gguf = self.backend_combo.currentData() == "llamacpp"
        rows: list[tuple[QWidget, bool]] = [(self.file_type_label, gguf), (self.kv_type_combo, gguf),
                                            (self.quant_combo, not gguf), (self.double_quant_check, not gguf),
                                            (self.dtype_combo, not gguf)]
        for widget, visible in rows:
            self.backend_form.setRowVisible(widget, visible)
        self.device_form.setRowVisible(self.gpu_layers_spin, gguf)

    def _update_availability(self) -> None:
        caps, model = self.capabilities, self.description
        is_folder = model is not None and model.kind == "hf"
        set_item_enabled(self.backend_combo, 0, caps.llama_cpp and not is_folder,
                         "llama.cpp loads GGUF files only." if is_folder else
                         "llama-cpp-python is not installed: pip install 'hearth-chat[gguf]'.")
        set_item_enabled(self.backend_combo, 1, caps.transformers,
                         "transformers and torch are not installed: pip install 'hearth-chat[hf]'.")
        llama = self.backend_combo.currentData() == "llamacpp"
        for index in range(self.device_combo.count()):
            if str(self.device_combo.itemData(index)).startswith("cuda"):
                set_item_enabled(self.device_combo, index, bool(caps.gpus) and (caps.llama_cpp_gpu or not llama),
                                 "No NVIDIA GPU with a working driver was found." if not caps.gpus else
                                 "This llama-cpp-python build has no GPU support; reinstall it with CUDA.")
        on_gpu = self._on_gpu()
        self.gpu_layers_spin.setEnabled(on_gpu)
        self.gpu_layers_spin.setToolTip("" if on_gpu else "Everything runs on the CPU: there is no GPU to put layers on.")
        quantized_kv_reason = "A quantized KV cache needs flash attention: set flash attention to auto or on."
        for index in (1, 2):
            set_item_enabled(self.kv_type_combo, index, self.flash_combo.currentData() != "off", quantized_kv_reason)
        for index in (1, 2, 3):
            set_item_enabled(self.quant_combo, index, caps.bitsandbytes,
                             "bitsandbytes is not installed: pip install bitsandbytes.")
        self.double_quant_check.setEnabled(self.quant_combo.currentData() in ("nf4", "fp4"))
        self.double_quant_check.setToolTip("" if self.double_quant_check.isEnabled() else "Only for 4-bit quantization.")
        flash_reason = ("flash-attn is not installed: transformers uses PyTorch SDPA." if not caps.flash_attn
                        else "Flash attention needs a CUDA GPU.")
        set_item_enabled(self.flash_combo, 1, llama or (caps.flash_attn and on_gpu), flash_reason)
        self._leave_disabled_choices()

    def _leave_disabled_choices(self) -> None:
        for combo, fallback in ((self.backend_combo, None), (self.device_combo, "auto"), (self.kv_type_combo, "f16"),
                                (self.quant_combo, "none"), (self.flash_combo, "auto")):
            if not item_enabled(combo, combo.currentIndex()):
                enabled = [i for i in range(combo.count()) if item_enabled(combo, i)]
                target = combo.findData(fallback) if fallback is not None else (enabled[0] if enabled else -1)
                if target >= 0:
                    combo.setCurrentIndex(target)

    def _on_gpu(self) -> bool:
        device = str(self.device_combo.currentData())
        if device == "auto":
            return bool(self.capabilities.gpus) and (self.capabilities.llama_cpp_gpu
                                                     or self.backend_combo.currentData() == "hf")
        return device.startswith("cuda")

    # ------------------------------------------------------------ the estimate

    def _refresh(self) -> None:
        if getattr(self, "_refreshing", False):
            return  # availability changes set widgets, which call back here
        self._refreshing = True
        try:
            self._update_availability()
            self._show_estimate()
        finally:
            self._refreshing = False

    def current_config(self) -> ModelConfig:
        scratch = Settings(self.settings.path, self.settings.as_dict())
        self._collect(scratch)
        return engine_inputs(scratch, self.default_path)[0]

    def current_estimate(self) -> Estimate | None:
        if self.description is None:
            return None
        config = self.current_config()
        if config.backend == "llamacpp" and self.description.kind != "gguf":
            return None
        return estimate(self.description, config, has_gpu=self._on_gpu())

    def _device_memory(self, result: Estimate) -> DeviceMemory:
        if result.on_gpu and self.capabilities.gpus:
            wanted = result.config.device if result.config.device.startswith("cuda:") else "cuda:0"
            return next((gpu for gpu in self.capabilities.gpus if gpu.device == wanted), self.capabilities.gpus[0])
        return self.ram

    def _show_estimate(self) -> None:
        result = self.current_estimate()
        if result is None:
            for label in (self.breakdown_label, self.verdict_label, self.suggestion_label, self.kv_note_label):
                label.clear()
            self.memory_bar.set_parts([], 0)
            return
        memory = self._device_memory(result)
        judged: Verdict = verdict(result, memory.free_bytes, memory.total_bytes)
        share = result.device_bytes / max(result.total_bytes, 1)
        parts = [("weights", result.weights_bytes), ("KV cache", result.kv_cache_bytes), ("overhead", result.overhead_bytes)]
        self.memory_bar.set_parts([(name, int(size * share)) for name, size in parts], memory.free_bytes)
        where = f"on {memory.name}" if result.on_gpu else "in RAM"
        self.breakdown_label.setText(" + ".join(f"<span style='color:{PART_COLORS[name].name()}'>&#9632;</span> "
                                                f"{name} {format_bytes(size)}" for name, size in parts)
                                     + f" = {format_bytes(result.total_bytes)}; {format_bytes(result.device_bytes)} {where}"
                                     + (f", {format_bytes(result.cpu_bytes)} in RAM" if result.on_gpu else ""))
        self.verdict_label.setText(f"<b style='color:{VERDICT_COLORS[judged.level]}'>{judged.level.capitalize()}.</b> "
                                   f"{judged.message}")
        self.suggestion_label.setText(judged.suggestion)
        self.kv_note_label.setText(result.kv_explanation())
        self.current_verdict = judged

    # ------------------------------------------------------------ settings in and out

    def _load_from_settings(self) -> None:
        s = self.settings
        _select(self.kv_type_combo, s.get("model.kv_cache_type"))
        _select(self.quant_combo, s.get("model.quantization"))
        self.double_quant_check.setChecked(s.get("model.double_quant"))
        _select(self.dtype_combo, s.get("model.dtype"))
        _select(self.device_combo, s.get("model.device"))
        _select(self.flash_combo, s.get("model.flash_attention"))
        for spin, key in self._spins():
            spin.setValue(s.get(key))
        self.system_prompt_edit.setPlainText(s.get("chat.system_prompt"))
        path = s.get("model.path") or self.default_path
        if path and not self.open_model(path):
            self.model_list.setCurrentRow(0)
        if s.get("model.backend") != "auto":
            _select(self.backend_combo, s.get("model.backend"))
        self.context_spin.setValue(s.get("model.context_length"))  # again: the model capped its maximum
        self._on_backend_changed()
        self._refresh()

    def _spins(self) -> list[tuple[QSpinBox | QDoubleSpinBox, str]]:
        return [(self.gpu_layers_spin, "model.gpu_layers"), (self.threads_spin, "model.threads"),
                (self.context_spin, "model.context_length"), (self.slots_spin, "model.slots"),
                (self.temperature_spin, "sampling.temperature"), (self.top_k_spin, "sampling.top_k"),
                (self.top_p_spin, "sampling.top_p"), (self.min_p_spin, "sampling.min_p"),
                (self.repeat_penalty_spin, "sampling.repeat_penalty"),
                (self.max_new_tokens_spin, "sampling.max_new_tokens"), (self.seed_spin, "sampling.seed")]

    def _collect(self, target: Settings) -> None:
        path = self.description.path if self.description is not None else ""
        target.set("model.path", "" if path == self.default_path else path)
        target.set("model.backend", self.backend_combo.currentData())
        for combo, key in ((self.kv_type_combo, "model.kv_cache_type"), (self.quant_combo, "model.quantization"),
                           (self.dtype_combo, "model.dtype"), (self.device_combo, "model.device"),
                           (self.flash_combo, "model.flash_attention")):
            target.set(key, combo.currentData())
        target.set("model.double_quant", self.double_quant_check.isChecked() and self.double_quant_check.isEnabled())
        for spin, key in self._spins():
            target.set(key, spin.value())
        target.set("chat.system_prompt", self.system_prompt_edit.toPlainText())

    def apply(self) -> None:
        """Save, then tell the window: a new ModelConfig only when the model must reload."""
        self._collect(self.settings)
        if self.description is not None:
            self.settings.add_recent(self.description.path)
        self.settings.save()
        config, sampling, prompt = engine_inputs(self.settings, self.default_path)
        self.sampling_applied.emit(sampling, prompt)
        if config != self._applied_config:
            self._previous_config, self._applied_config = self._applied_config, config
            self.error_label.clear()
            self.model_config_applied.emit(config)

    def show_load_error(self, message: str) -> None:
        """The applied model failed to load and the old one stays: say why, and let Apply try again."""
        self.error_label.setText(message)
        self._applied_config = self._previous_config

    def _on_ok(self) -> None:
        self.apply()
        self.accept()
