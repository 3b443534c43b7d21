"""The About dialog: Hearth's version and everything under it that a bug report needs.

`collect_versions()` is plain data (tested without a window); `AboutDialog` shows it
with a button that copies it as text. torch is reported only when something already
imported it: the GGUF edition never loads it, and About must not load 1 GB to say so.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import sys
from typing import Any

import PySide6
from PySide6.QtCore import Qt, qVersion
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog, QDialogButtonBox, QFormLayout, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget,
)

import resources
from app.misc import logs
from engine.protocol import ModelInfo

TAGLINE = "Chat with language models that run on this computer, several chats at once."


def hearth_version() -> str:
    try:
        return importlib.metadata.version("hearth-chat")
    except importlib.metadata.PackageNotFoundError:  # a bundle or a bare checkout carries no metadata
        from app import __version__

        return __version__


def collect_versions(model_info: ModelInfo | None = None) -> list[tuple[str, str]]:
    """(name, value) rows, in the order the dialog shows them."""
    rows = [
        ("Hearth", hearth_version()),
        ("Python", f"{platform.python_version()} ({platform.python_implementation()})"),
        ("Qt", f"{qVersion()} (PySide6 {PySide6.__version__})"),
        *llama_cpp_rows(),
        ("PyTorch", torch_summary()),
        ("Operating system", platform.platform()),
        *device_rows(),
    ]
    if model_info is not None:
        rows.append(("Model", f"{model_info.name} ({model_info.backend}, {model_info.quantization}, "
                              f"{model_info.device})"))
    log_path = logs.current_log_path()
    rows.append(("Log file", str(log_path) if log_path else "not open"))
    return rows


def llama_cpp_rows() -> list[tuple[str, str]]:
    if importlib.util.find_spec("llama_cpp") is None:
        return [("llama.cpp", "not installed (pip install llama-cpp-python)")]
    try:
        import llama_cpp
    except Exception as error:  # a broken shared library: say so, About must still open
        return [("llama.cpp", f"cannot be loaded: {error}")]
    version = getattr(llama_cpp, "__version__", "unknown")
    try:
        info = llama_cpp.llama_print_system_info()
        build = info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)
    except Exception as error:
        build = f"unavailable ({error})"
    return [("llama-cpp-python", version), ("llama.cpp build", build.strip().rstrip("|").strip())]


def torch_summary() -> str:
    torch: Any = sys.modules.get("torch")
    if torch is None:
        return "not loaded (only the Hugging Face backend uses it)"
    cuda = getattr(torch.version, "cuda", None)
    try:
        available = bool(torch.cuda.is_available())
    except Exception:
        available = False
    if cuda is None:
        return f"{torch.__version__} (CPU build)"
    return f"{torch.__version__}, CUDA {cuda} ({'a GPU is available' if available else 'no usable GPU'})"


def device_rows() -> list[tuple[str, str]]:
    """The CPU with its RAM, then every NVIDIA GPU (NVML, or torch when it is loaded)."""
    from engine.catalog.devices import cuda_devices, system_memory
    from engine.units import format_bytes

    cpu = platform.processor() or platform.machine() or "unknown CPU"
    rows = [("CPU", f"{cpu}, {os.cpu_count() or '?'} logical cores, "
                    f"{format_bytes(system_memory().total_bytes)} RAM")]
    gpus = [f"{gpu.device}: {gpu.name} ({format_bytes(gpu.total_bytes)})" for gpu in cuda_devices()]
    if not gpus and "torch" in sys.modules:
        gpus = _torch_gpus(sys.modules["torch"])
    rows.append(("GPU", "; ".join(gpus) if gpus else "no NVIDIA GPU found"))
    return rows


def _torch_gpus(torch: Any) -> list[str]:
    try:
        return [f"cuda:{i}: {torch.cuda.get_device_name(i)}" for i in range(torch.cuda.device_count())]
    except Exception:
        return []


def versions_text(rows: list[tuple[str, str]]) -> str:
    return "\n".join(f"{name}: {value}" for name, value in rows)


class AboutDialog(QDialog):
    """Icon, name, tagline and the versions table, with Copy and Close."""

    def __init__(self, parent: QWidget | None = None, model_info: ModelInfo | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("aboutDialog")
        self.setWindowTitle("About Hearth")
        self.rows = collect_versions(model_info)
        layout = QVBoxLayout(self)
        layout.addLayout(self._header())
        layout.addLayout(self._table())
        layout.addWidget(self._buttons())
        self.setMinimumWidth(560)

    def _header(self) -> QHBoxLayout:
        header = QHBoxLayout()
        icon = QLabel()
        icon.setPixmap(resources.app_icon().pixmap(64, 64))
        header.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        title = QLabel(f"<h2>Hearth {self.rows[0][1]}</h2><p>{TAGLINE}</p>")
        title.setWordWrap(True)
        header.addWidget(title, 1)
        return header

    def _table(self) -> QFormLayout:
        form = QFormLayout()
        for name, value in self.rows:
            label = QLabel(value)
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            form.addRow(f"{name}:", label)
        return form

    def _buttons(self) -> QDialogButtonBox:
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = QPushButton("Copy to Clipboard")
        self.copy_button.setToolTip("Copy these versions as text, for a bug report")
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.clicked.connect(self._on_copy_clicked)
        buttons.rejected.connect(self.reject)
        return buttons

    def _on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText(versions_text(self.rows))
        self.copy_button.setText("Copied")
