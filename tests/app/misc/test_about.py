"""The About dialog's facts: versions that match the running libraries, and no torch import to get them."""

from __future__ import annotations

import platform
import sys

import pytest
from PySide6.QtCore import qVersion
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QLabel

from app.misc import about
from engine.protocol import ModelInfo


def _rows(**kwargs) -> dict[str, str]:
    return dict(about.collect_versions(**kwargs))


def test_versions_match_the_running_python_and_qt() -> None:
    rows = _rows()
    assert list(rows)[:3] == ["Hearth", "Python", "Qt"]
    assert rows["Python"].startswith(platform.python_version() + " (")
    assert rows["Qt"].startswith(qVersion() + " (PySide6 ")
    assert rows["Hearth"].count(".") >= 2
    assert "logical cores" in rows["CPU"] and rows["CPU"].endswith("RAM")


def test_llama_cpp_build_info_is_reported() -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    rows = _rows()
    assert rows["llama-cpp-python"] == llama_cpp.__version__
    assert rows["llama.cpp build"].startswith("CPU : ")
    assert not rows["llama.cpp build"].endswith("|")


def test_torch_is_reported_only_when_already_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    rows = _rows()
    assert rows["PyTorch"] == "not loaded (only the Hugging Face backend uses it)"
    assert "torch" not in sys.modules


def test_the_loaded_model_is_listed() -> None:
    info = ModelInfo(name="SmolLM2-135M-Instruct", path="/m.gguf", backend="llamacpp", device="cpu",
                     quantization="Q4_1", attention="flash attention off", context_length=4096, slots=4,
                     model_bytes=1, kv_cache_bytes=1, gpu_offload=False)
    assert _rows(model_info=info)["Model"] == "SmolLM2-135M-Instruct (llamacpp, Q4_1, cpu)"


def test_dialog_shows_every_row_and_copies_them(qtbot) -> None:
    dialog = about.AboutDialog()
    qtbot.addWidget(dialog)
    shown = {label.text() for label in dialog.findChildren(QLabel)}
    for name, value in dialog.rows:
        assert value in shown, name
    dialog.copy_button.click()
    copied = QGuiApplication.clipboard().text()
    assert copied.splitlines()[0] == f"Hearth: {dialog.rows[0][1]}"
    assert f"Qt: {qVersion()}" in copied
    assert dialog.copy_button.text() == "Copied"
