"""Model > Check quantization…: compare quantized models with their reference, in the background.

Modeless: the chats stay usable while the check runs on its own thread. When
the check does not fit in memory beside the chats' model, the dialog says so
before Run and the chats' model is unloaded for the check and loaded again
after it (finished, failed or cancelled). Results are saved as they finish,
listed for opening again, and exported as JSON (the documented shape) or
Markdown.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Sequence

from PySide6.QtCore import QCoreApplication, Signal
from PySide6.QtWidgets import (
    QComboBox, QDialog, QFileDialog, QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget,
)

from app.quantcheck import saved as store
from app.quantcheck.inputs_form import InputsForm
from app.quantcheck.memory_plan import free_memory, plan
from app.quantcheck.picker import ModelPicker
from app.quantcheck.results_view import ResultsView
from app.quantcheck.worker import CheckWorker
from engine.catalog.models import ModelEntry
from engine.quantcheck.check import CheckSpec, ModelSpec
from engine.quantcheck.errors import CheckError

if TYPE_CHECKING:
    from app.settings.model_scan import ScanResult

class ChatsModel(Protocol):
    """The window's side: the model the chats use, and making room for the check."""

    def loaded_model(self) -> tuple[str, int] | None: ...  # name, bytes; None when none is loaded
    def answering(self) -> bool: ...
    def pause(self, reason: str) -> None: ...
    def resume(self) -> None: ...


class QuantCheckDialog(QDialog):
    check_finished = Signal(object)  # SavedCheck
    check_failed = Signal(str)
    check_cancelled = Signal()

    def __init__(
        self, library: Sequence[ModelEntry] | None, chats: ChatsModel | None = None, parent: QWidget | None = None,
        saved_folder: Path | None = None, recent: Sequence[str] = (),
    ) -> None:
        """`library` None: look for the models (as the settings dialog does, off the GUI thread)."""
        super().__init__(parent)
        self.setWindowTitle("Check quantization")
        available = self.screen().availableGeometry()
        self.resize(min(1100, int(available.width() * 0.95)), min(820, int(available.height() * 0.9)))
        self._chats = chats
        self._paused = False
        self._saved_folder = saved_folder
        self.picker = ModelPicker(library or ())
        self.worker = CheckWorker(self)
        self.results = ResultsView()
        self.inputs = InputsForm()
        self._build()
        self._connect()
        self._refresh_saved()
        self._on_selection_changed()
        if library is None:
            self._scan_models(recent)
        application = QCoreApplication.instance()
        if application is not None:
            application.aboutToQuit.connect(self._on_app_quitting)

    # ------------------------------------------------------------ building

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.addWidget(self.picker)
        layout.addWidget(self.inputs)
        self.memory_note = QLabel()
        self.memory_note.setWordWrap(True)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setObjectName("error")
        self.error.setStyleSheet("color: #c62828")
        layout.addWidget(self.memory_note)
        layout.addWidget(self.error)
        layout.addLayout(self._run_row())
        layout.addWidget(self.results, 1)
        layout.addLayout(self._saved_row())

    def _run_row(self) -> QHBoxLayout:
        self.progress = QProgressBar(maximum=1000, textVisible=False)
        self.status = QLabel()
        self.run_button = QPushButton("Run")
        self.run_button.setDefault(True)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        row = QHBoxLayout()
        row.addWidget(self.progress, 1)
        row.addWidget(self.status, 2)
        row.addWidget(self.run_button)
        row.addWidget(self.cancel_button)
        return row

    def _saved_row(self) -> QHBoxLayout:
        self.saved = QComboBox()
        self.saved.setMinimumContentsLength(50)
        self.export_json_button = QPushButton("Export JSON…")
        self.export_markdown_button = QPushButton("Export Markdown…")
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        row = QHBoxLayout()
        row.addWidget(QLabel("Saved checks:"))
        row.addWidget(self.saved, 1)
        row.addWidget(self.export_json_button)
        row.addWidget(self.export_markdown_button)
        row.addWidget(close)
        return row

    def _connect(self) -> None:
        self.picker.changed.connect(self._on_selection_changed)
        self.run_button.clicked.connect(self._on_run)
        self.cancel_button.clicked.connect(self._on_cancel)
        self.saved.activated.connect(self._on_saved_chosen)
        self.export_json_button.clicked.connect(lambda: self._on_export("json"))
        self.export_markdown_button.clicked.connect(lambda: self._on_export("markdown"))
        self.worker.progressed.connect(self._on_progress)
        self.worker.check_finished.connect(self._on_finished)
        self.worker.check_failed.connect(self._on_failed)
        self.worker.check_cancelled.connect(self._on_cancelled)

    # ------------------------------------------------------------ running

    def build_spec(self) -> CheckSpec:
        """What Run will check; raises CheckError with a sentence for the dialog."""
        chosen = self.picker.selection()
        if isinstance(chosen, str):
            raise CheckError(chosen)
        reference, candidates = chosen
        return CheckSpec(
            reference=reference, candidates=candidates, text=self.inputs.text(), questions=self.inputs.questions(),
            chunks=self.inputs.chunk_limit(),
        )

    def set_library(self, library: Sequence[ModelEntry]) -> None:
        self.picker.set_library(library)

    def _scan_models(self, recent: Sequence[str]) -> None:
        from app.settings.capabilities import probe_capabilities
        from app.settings.model_scan import ModelScan, ScanResult
        from engine.catalog.models import discover

        self.memory_note.setText("Looking for models…")
        scan = ModelScan(lambda: ScanResult(tuple(discover(recent)), probe_capabilities(deep=False)))
        scan.finished.connect(self._on_models_found)  # a bound slot: nothing arrives once the dialog is gone
        scan.start()

    def _on_models_found(self, result: ScanResult) -> None:
        if result.error:
            self.error.setText(result.error)
        self.set_library(result.entries)

    def memory_plan_for(self, models: Sequence[ModelSpec]) -> tuple[bool, str]:
        loaded = self._chats.loaded_model() if self._chats else None
        decided = plan(models, loaded, free_memory())
        return decided.pause_chats, decided.text

    def _on_selection_changed(self) -> None:
        chosen = self.picker.selection()
        self.run_button.setEnabled(not isinstance(chosen, str) and not self.worker.running)
        if isinstance(chosen, str):
            self.memory_note.setText(chosen)
            return
        self.memory_note.setText(self.memory_plan_for([chosen[0], *chosen[1]])[1])

    def _on_run(self) -> None:
        self.error.clear()
        try:
            spec = self.build_spec()
        except CheckError as error:
            self.error.setText(str(error))
            return
        pause = self.memory_plan_for([spec.reference, *spec.candidates])[0]
        if pause and self._chats is not None:
            if self._chats.answering():
                self.error.setText("A chat is still answering. Stop it or let it finish: the check needs its model's memory.")
                return
            self._chats.pause("Paused while a quantization check runs (Model > Check quantization…).")
            self._paused = True
        self._set_running(True)
        self.status.setText("Starting…")
        self.worker.start(spec)

    def _on_cancel(self) -> None:
        self.worker.cancel()
        self.cancel_button.setEnabled(False)
        self.status.setText("Cancelling…")

    def _on_progress(self, fraction: float, message: str) -> None:
        self.progress.setValue(int(fraction * 1000))
        self.status.setText(message)

    def _on_finished(self, saved: store.SavedCheck) -> None:
        self._end_run(f"Done in {saved.report.seconds:.0f} s; saved as {saved.path.name}.")
        self.results.show_report(saved.report)
        self._refresh_saved(saved.path)
        self.check_finished.emit(saved)

    def _on_failed(self, message: str) -> None:
        self._end_run("The check stopped.")
        self.error.setText(message)
        self.check_failed.emit(message)

    def _on_cancelled(self) -> None:
        self._end_run("Cancelled: nothing was saved.")
        self.check_cancelled.emit()

    def _end_run(self, status: str) -> None:
        self._set_running(False)
        self.status.setText(status)
        self._resume_chats()

    def _set_running(self, running: bool) -> None:
        self.picker.setEnabled(not running)
        self.inputs.setEnabled(not running)
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        if running:
            self.progress.setValue(0)

    def _resume_chats(self) -> None:
        if self._paused and self._chats is not None:
            self._paused = False
            self._chats.resume()

    # ------------------------------------------------------------ saved results and files

    def _refresh_saved(self, select: Path | None = None) -> None:
        self.saved.clear()
        for check in store.saved_checks(self._saved_folder):
            self.saved.addItem(check.title, check)
            if check.path == select:
                self.saved.setCurrentIndex(self.saved.count() - 1)
        self._update_export_buttons()

    def _on_saved_chosen(self, index: int) -> None:
        check = self.saved.itemData(index)
        if isinstance(check, store.SavedCheck):
            self.results.show_report(check.report)
            self._update_export_buttons()

    def _update_export_buttons(self) -> None:
        for button in (self.export_json_button, self.export_markdown_button):
            button.setEnabled(self.results.report is not None)

    def _on_export(self, kind: str) -> None:
        report = self.results.report
        if report is None:
            return
        suffix, pattern = (".json", "JSON (*.json)") if kind == "json" else (".md", "Markdown (*.md)")
        name = f"quantization-check-{Path(report.reference.path).stem}{suffix}"
        path, _ = QFileDialog.getSaveFileName(self, "Export the check", name, pattern)
        if path:
            self.export_to(Path(path), kind)

    def export_to(self, path: Path, kind: str) -> None:
        assert self.results.report is not None
        try:
            (store.export_json if kind == "json" else store.export_markdown)(self.results.report, path)
        except OSError as error:
            self.error.setText(f"Could not write {path}: {error.strerror or error}.")
            return
        self.status.setText(f"Exported to {path}.")

    def done(self, result: int) -> None:
        """Closing (Close, Esc, the title bar) cancels a running check; it ends on its own thread and
        then gives the chats their model back, so the window never waits here."""
        if self.worker.running:
            self._on_cancel()
        super().done(result)

    def _on_app_quitting(self) -> None:
        if self.worker.running:
            self.worker.cancel()
            self.worker.wait()  # llama.cpp must not be mid-decode when the interpreter exits
