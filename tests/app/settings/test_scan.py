"""The settings dialog opens at once; finding models and probing the machine happen on a thread and fill in after."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtWidgets import QApplication

from app.settings import dialog as dialog_module
from app.settings.capabilities import Capabilities
from app.settings.dialog import SettingsDialog
from app.settings.model_scan import ModelScan, ScanResult, scan_machine
from app.settings.store import Settings
from app.settings.widgets import item_enabled
from engine.catalog.devices import DeviceMemory
from engine.catalog.models import discover

GPU = DeviceMemory("cuda:0", "Test GPU", free_bytes=8 << 30, total_bytes=16 << 30)


class HeldScan:
    """A scan that waits until the test lets it finish, and notes the thread it ran on."""

    def __init__(self, result: ScanResult) -> None:
        self.result, self.release, self.threads = result, threading.Event(), []

    def __call__(self) -> ScanResult:
        self.threads.append(threading.current_thread())
        assert self.release.wait(30), "the test never released the scan"
        return self.result


def other_model(tmp_path: Path, default_model: str) -> str:
    """A second GGUF in the recent list: only the scan finds it."""
    copy = tmp_path / "second-model.gguf"
    copy.write_bytes(Path(default_model).read_bytes())
    return str(copy)


def test_the_dialog_opens_before_the_scan_and_fills_in_when_it_returns(qtbot, tmp_path: Path, default_model: str) -> None:
    entries = discover([other_model(tmp_path, default_model)], folder=tmp_path / "no-models", hf_cache=False)
    held = HeldScan(ScanResult(tuple(entries), Capabilities(llama_cpp_gpu=True, transformers=True, gpus=(GPU,))))
    dialog = SettingsDialog(Settings.load(), scan=held)
    qtbot.addWidget(dialog)
    dialog.show()
    # Open and usable while the scan is held: the settings' model is described, nothing else yet.
    assert dialog.scanning and dialog.models.hint_label.text() == "Looking for models and GPUs…"
    assert dialog.description is not None and dialog.description.path == default_model
    assert dialog.models.texts() == [f"SmolLM2-135M-Instruct.Q4_1  (Opened)\n{dialog.description.summary()}"]
    assert dialog.memory.verdict_label.text().count("Fits.") == 1
    cuda = dialog.form.device_combo.findData("cuda")
    assert not item_enabled(dialog.form.device_combo, cuda)
    assert dialog.form.device_combo.itemData(cuda, 3) == "Still looking for GPUs…"  # Qt.ToolTipRole
    dialog.form.slots_spin.setValue(2)  # the user goes on meanwhile

    held.release.set()
    qtbot.waitUntil(lambda: not dialog.scanning, timeout=10_000)
    assert held.threads and held.threads[0] is not threading.main_thread()
    assert [text.split("\n")[0] for text in dialog.models.texts()] == [
        "SmolLM2-135M-Instruct.Q4_1  (Bundled default)", "second-model  (Recently used)"]
    assert dialog.description.path == default_model and dialog.models.hint_label.isHidden()
    gpu = dialog.form.device_combo.findData("cuda:0")
    assert dialog.form.device_combo.itemText(gpu) == "cuda:0: Test GPU (16.0 GiB)" and item_enabled(dialog.form.device_combo, gpu)
    assert dialog.form.gpu_layers_spin.isEnabled()  # "auto" now means the GPU
    assert dialog.form.slots_spin.value() == 2 and "on Test GPU" in dialog.memory.breakdown_label.text()


def test_opening_settings_in_the_window_scans_on_its_own_thread(qtbot, scripted_window, monkeypatch, default_model) -> None:
    threads: list[str] = []

    def recording_scan(recent: list[str]) -> ScanResult:
        threads.append(threading.current_thread().name)
        return scan_machine(recent)

    monkeypatch.setattr(dialog_module, "scan_machine", recording_scan)
    window = scripted_window()
    window.open_settings()
    dialog = window._settings_dialog
    assert dialog.isVisible() and dialog.scanning and dialog.description.path == default_model
    qtbot.waitUntil(lambda: not dialog.scanning, timeout=30_000)
    assert threads == ["hearth-model-scan"]
    assert any("(Bundled default)" in text for text in dialog.models.texts())
    assert dialog.capabilities.gpus_known and dialog.capabilities.llama_cpp
    dialog.reject()


def test_a_dialog_closed_before_its_scan_returns_leaves_nothing_behind(qtbot, default_model: str) -> None:
    held = HeldScan(ScanResult((), Capabilities()))
    dialog = SettingsDialog(Settings.load(), scan=held)
    dialog.show()
    qtbot.waitUntil(lambda: bool(held.threads))
    with qtbot.waitSignal(dialog.destroyed):
        dialog.deleteLater()
    assert len(QApplication.instance().findChildren(ModelScan)) == 1  # still running, owned by the application
    held.release.set()
    qtbot.waitUntil(lambda: not QApplication.instance().findChildren(ModelScan), timeout=10_000)
