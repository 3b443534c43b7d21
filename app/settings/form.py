"""The settings dialog's options: backend and quantization, device and context, sampling; which can work here.

SettingsForm owns the option widgets, reads them from and writes them to
Settings (the model's path aside: that is the model list's), and disables the
choices this machine cannot run, with the reason as tooltip. `changed` fires for
any option the memory estimate depends on. Its groups (`backend_group`, `remote`,
`device_group`, `sampling_group`) are laid out by the dialog, on its pages.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QGroupBox, QLabel, QPlainTextEdit, QSpinBox,
                               QWidget)

from app.settings.capabilities import Capabilities
from app.settings.draft_model_row import DraftModelRow
from app.settings.projector_row import ProjectorRow
from app.settings.remote_section import RemoteSection
from app.settings.store import Settings
from app.settings.widgets import combo, double_spin, item_enabled, select, set_item_enabled, spin
from engine.catalog.description import ModelDescription
from engine.catalog.devices import DeviceMemory

QUANTIZED_KV_REASON = "A quantized KV cache needs flash attention: set flash attention to auto or on."


class SettingsForm(QObject):
    changed = Signal()

    def __init__(self, capabilities: Capabilities, ram: DeviceMemory, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.capabilities, self.ram = capabilities, ram
        self.remote = RemoteSection()
        self.device_group = self._build_device_group()
        self.backend_group = self._build_backend_group()
        self.sampling_group = self._build_sampling_group()
        self.backend_combo.currentIndexChanged.connect(self._on_backend_changed)
        for box in (self.gpu_layers_spin, self.threads_spin, self.context_spin, self.slots_spin):
            box.valueChanged.connect(self.changed)
        for choice in (self.backend_combo, *(choice for choice, _ in self._choices())):
            choice.currentIndexChanged.connect(self.changed)
        self.double_quant_check.toggled.connect(self.changed)
        self.projector_row.changed.connect(self.changed)
        self.draft_model_row.changed.connect(self.changed)

    # ------------------------------------------------------------ building

    def _build_backend_group(self) -> QGroupBox:
        group = QGroupBox("Backend and quantization")
        self.backend_combo = combo([("llama.cpp", "llamacpp"), ("transformers", "hf"),
                                    ("Remote server (OpenAI-compatible)", "remote")])
        self.file_type_label = QLabel()
        self.projector_row = ProjectorRow()
        self.kv_type_combo = combo([("f16", "f16"), ("q8_0", "q8_0"), ("q4_0", "q4_0")])
        self.quant_combo = combo([("none", "none"), ("8-bit (bitsandbytes)", "int8"),
                                  ("4-bit NF4", "nf4"), ("4-bit FP4", "fp4")])
        self.double_quant_check = QCheckBox("double quantization")
        self.dtype_combo = combo([(name, name) for name in ("auto", "bfloat16", "float16", "float32")])
        self.fast_decode_combo = combo([("auto", "auto"), ("on", "on"), ("off", "off")])
        self.fast_decode_combo.setToolTip("On a GPU, decode steps replayed from CUDA graphs over a static KV cache. "
                                          "auto: only when a check at load finds them faster and correct.")
        self.backend_form = _rows(group, (("Backend", self.backend_combo), ("File type", self.file_type_label),
                                          ("Vision projector", self.projector_row),
                                          ("KV cache type", self.kv_type_combo), ("Quantization", self.quant_combo),
                                          ("", self.double_quant_check), ("Compute dtype", self.dtype_combo),
                                          ("Fast decode", self.fast_decode_combo)))
        return group

    def _build_device_group(self) -> QGroupBox:
        group = QGroupBox("Device and context")
        self.device_combo = combo(self._device_choices())
        self.gpu_layers_spin = spin(-1, 999, -1, special="all")
        self.threads_spin = spin(0, os.cpu_count() or 64, 0, special="automatic")
        self.context_spin = spin(256, 1 << 20, 4096)
        self.context_spin.setSingleStep(256)
        self.slots_spin = spin(1, 64, 4)
        self.kv_note_label = QLabel()
        self.kv_note_label.setWordWrap(True)
        self.flash_combo = combo([("auto", "auto"), ("on", "on"), ("off", "off")])
        self.prompt_copy_combo = combo([("auto", "auto"), ("on", "on"), ("off", "off")])
        self.prompt_copy_combo.setToolTip(
            "llama.cpp on the CPU: long prompts are read with an F32 copy of a quantized model, made once and kept "
            "in the cache folder: 2-2.5x faster, ~4 bytes a parameter more memory. Answers are generated with the "
            "quantized weights. auto: small models only (a copy of at most 1 GiB, and an eighth of the memory).")
        self.device_form = _rows(group, (("Device", self.device_combo), ("GPU layers", self.gpu_layers_spin),
                                         ("CPU threads", self.threads_spin), ("Context per chat", self.context_spin),
                                         ("Parallel chats", self.slots_spin), ("", self.kv_note_label),
                                         ("Flash attention", self.flash_combo),
                                         ("Prompt reading copy", self.prompt_copy_combo)))
        return group

    def _build_sampling_group(self) -> QGroupBox:
        group = QGroupBox("Sampling defaults (a chat may override them)")
        self.temperature_spin = double_spin(0.0, 2.0, 0.05)
        self.top_k_spin = spin(0, 1000, special="off")
        self.top_p_spin = double_spin(0.0, 1.0, 0.01)
        self.min_p_spin = double_spin(0.0, 1.0, 0.01)
        self.repeat_penalty_spin = double_spin(0.5, 2.0, 0.05)
        self.max_new_tokens_spin = spin(1, 1 << 20)
        self.seed_spin = spin(-1, 2**31 - 1, special="random")
        self.speculative_combo = combo([("auto (prompt lookup, draft model)", "auto"), ("off", "off")])
        self.speculative_combo.setToolTip("Guess the next tokens from the conversation (or with the draft model) and "
                                          "check them in the same pass: the same answer, sooner where guesses hold.")
        self.draft_model_row = DraftModelRow()
        self.system_prompt_edit = QPlainTextEdit()
        self.system_prompt_edit.setMaximumHeight(70)
        self.sampling_form = _rows(group, (
            ("Temperature", self.temperature_spin), ("Top-k", self.top_k_spin), ("Top-p", self.top_p_spin),
            ("Min-p", self.min_p_spin), ("Repeat penalty", self.repeat_penalty_spin),
            ("Max new tokens", self.max_new_tokens_spin), ("Seed", self.seed_spin),
            ("Speculative decoding", self.speculative_combo), ("Draft model", self.draft_model_row),
            ("System prompt", self.system_prompt_edit)))
        return group

    def _device_choices(self) -> list[tuple[str, str]]:
        gpus = [(gpu.label(), gpu.device) for gpu in self.capabilities.gpus] or [("CUDA", "cuda")]
        return [("auto", "auto"), *gpus, (self.ram.label(), "cpu")]

    def set_capabilities(self, capabilities: Capabilities) -> None:
        """What the deep probe found: the GPUs replace the placeholder; the device chosen stays if it still exists."""
        self.capabilities = capabilities
        wanted = self.device_combo.currentData()
        self.device_combo.blockSignals(True)  # one change afterwards, not one per item
        try:
            self.device_combo.clear()
            for label, value in self._device_choices():
                self.device_combo.addItem(label, value)
            select(self.device_combo, wanted)
        finally:
            self.device_combo.blockSignals(False)

    # ------------------------------------------------------------ the model and what can work

    def show_model(self, model: ModelDescription) -> None:
        """A newly chosen model: its file type, its limits, and the backend that reads it."""
        self.file_type_label.setText(model.quantization if model.kind == "gguf" else "")
        if model.trained_context_length:
            self.context_spin.setMaximum(model.trained_context_length)  # clamps the value too
        self.gpu_layers_spin.setMaximum(model.layers or 999)
        self.projector_row.set_model(model.path if model.kind == "gguf" else "")
        self.draft_model_row.set_model(model.path)  # what drafts for it follows the backend (set_backend)
        select(self.backend_combo, model.default_backend)

    @property
    def remote_chosen(self) -> bool:
        return self.backend_combo.currentData() == "remote"

    def _on_backend_changed(self) -> None:
        gguf, hf, remote = (self.backend_combo.currentData() == name for name in ("llamacpp", "hf", "remote"))
        for widget, visible in ((self.file_type_label, gguf), (self.projector_row, gguf), (self.kv_type_combo, gguf),
                                (self.quant_combo, hf),
                                (self.double_quant_check, hf), (self.dtype_combo, hf), (self.fast_decode_combo, hf)):
            self.backend_form.setRowVisible(widget, visible)
        self.remote.setVisible(remote)
        self.device_group.setVisible(not remote)  # the server's machine decides all of that
        self.device_form.setRowVisible(self.gpu_layers_spin, gguf)
        self.device_form.setRowVisible(self.prompt_copy_combo, gguf)
        self.sampling_form.setRowVisible(self.draft_model_row, gguf or hf)
        self.draft_model_row.set_backend("hf" if hf else "llamacpp")

    def update_availability(self, model: ModelDescription | None) -> None:
        caps = self.capabilities
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
                                 "Still looking for GPUs…" if not caps.gpus_known else
                                 "No NVIDIA GPU with a working driver was found." if not caps.gpus else
                                 "This llama-cpp-python build has no GPU support; reinstall it with CUDA.")
        on_gpu = self.on_gpu()
        self.gpu_layers_spin.setEnabled(on_gpu)
        self.gpu_layers_spin.setToolTip("" if on_gpu else "Everything runs on the CPU: there is no GPU to put layers on.")
        for index in (1, 2):
            set_item_enabled(self.kv_type_combo, index, self.flash_combo.currentData() != "off", QUANTIZED_KV_REASON)
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
        for box, fallback in ((self.backend_combo, None), (self.device_combo, "auto"), (self.kv_type_combo, "f16"),
                              (self.quant_combo, "none"), (self.flash_combo, "auto")):
            if not item_enabled(box, box.currentIndex()):
                enabled = [i for i in range(box.count()) if item_enabled(box, i)]
                target = box.findData(fallback) if fallback is not None else (enabled[0] if enabled else -1)
                if target >= 0:
                    box.setCurrentIndex(target)

    def on_gpu(self) -> bool:
        device = str(self.device_combo.currentData())
        if device == "auto":
            return bool(self.capabilities.gpus) and (self.capabilities.llama_cpp_gpu
                                                     or self.backend_combo.currentData() == "hf")
        return device.startswith("cuda")

    # ------------------------------------------------------------ settings in and out

    def load(self, settings: Settings) -> None:
        """Everything but the backend and the context, which the model's own choice sets first (see finish_load)."""
        for choice, key in self._choices():
            select(choice, settings.get(key))
        self.double_quant_check.setChecked(settings.get("model.double_quant"))
        for box, key in self._spins():
            box.setValue(settings.get(key))
        self.system_prompt_edit.setPlainText(settings.get("chat.system_prompt"))
        self.projector_row.load(settings)
        self.draft_model_row.load(settings)
        self.remote.load(settings)

    def finish_load(self, settings: Settings) -> None:
        """After the model was chosen: the settings' backend, and the context again (the model capped its maximum)."""
        if settings.get("model.backend") != "auto":
            select(self.backend_combo, settings.get("model.backend"))
        self.context_spin.setValue(settings.get("model.context_length"))
        self._on_backend_changed()

    def _choices(self) -> list[tuple[QComboBox, str]]:
        return [(self.kv_type_combo, "model.kv_cache_type"), (self.quant_combo, "model.quantization"),
                (self.dtype_combo, "model.dtype"), (self.device_combo, "model.device"),
                (self.flash_combo, "model.flash_attention"), (self.fast_decode_combo, "model.fast_decode"),
                (self.prompt_copy_combo, "model.prompt_copy"),
                (self.speculative_combo, "sampling.speculative")]

    def _spins(self) -> list[tuple[QSpinBox | QDoubleSpinBox, str]]:
        return [(self.gpu_layers_spin, "model.gpu_layers"), (self.threads_spin, "model.threads"),
                (self.context_spin, "model.context_length"), (self.slots_spin, "model.slots"),
                (self.temperature_spin, "sampling.temperature"), (self.top_k_spin, "sampling.top_k"),
                (self.top_p_spin, "sampling.top_p"), (self.min_p_spin, "sampling.min_p"),
                (self.repeat_penalty_spin, "sampling.repeat_penalty"),
                (self.max_new_tokens_spin, "sampling.max_new_tokens"), (self.seed_spin, "sampling.seed")]

    def collect(self, target: Settings) -> None:
        target.set("model.backend", self.backend_combo.currentData())
        for choice, key in self._choices():
            target.set(key, choice.currentData())
        target.set("model.double_quant", self.double_quant_check.isChecked() and self.double_quant_check.isEnabled())
        for box, key in self._spins():
            target.set(key, box.value())
        target.set("chat.system_prompt", self.system_prompt_edit.toPlainText())
        self.projector_row.collect(target)
        self.draft_model_row.collect(target)
        self.remote.collect(target)


def _rows(group: QGroupBox, rows: tuple[tuple[str, QWidget], ...]) -> QFormLayout:
    form = QFormLayout(group)
    for label, widget in rows:
        form.addRow(label, widget)
    return form
