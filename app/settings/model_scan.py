"""Finding the models and probing the machine off the GUI thread, for the settings dialog.

`scan_machine` is plain Python (the HF cache scan imports huggingface_hub, the
deep probe loads llama.cpp: together a second or more on a busy machine). A
ModelScan runs one on a thread named "hearth-model-scan" and delivers the
ScanResult on the GUI thread through `finished`. The scan belongs to the
application, not to the dialog, so a dialog closed early leaves nothing
half-deleted: the result simply has nobody to go to.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PySide6.QtCore import QCoreApplication, QObject, Signal, Slot

from app.settings.capabilities import Capabilities, probe_capabilities
from engine.catalog.description import ModelEntry
from engine.catalog.models import discover

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScanResult:
    entries: tuple[ModelEntry, ...]
    capabilities: Capabilities
    error: str = ""  # the scan failed: what to tell the user (the entries are then empty)


def scan_machine(recent: Sequence[str]) -> ScanResult:
    return ScanResult(tuple(discover(recent)), probe_capabilities())


class ModelScan(QObject):
    """One scan; `finished(ScanResult)` arrives on the GUI thread."""

    finished = Signal(object)
    _done = Signal(object)  # emitted on the scan's thread, queued to this object's (the GUI thread)

    def __init__(self, job: Callable[[], ScanResult]) -> None:
        super().__init__(QCoreApplication.instance())  # outlives the dialog; deleted once it has delivered
        self._job = job
        self._done.connect(self._on_done)

    def start(self) -> None:
        threading.Thread(target=self._run, name="hearth-model-scan", daemon=True).start()

    def _run(self) -> None:
        try:
            result = self._job()
        except Exception as error:  # a bug in a scan must not leave the dialog waiting forever
            log.exception("the model scan failed")
            result = ScanResult((), probe_capabilities(deep=False), f"Looking for models failed: {error}")
        self._done.emit(result)

    @Slot(object)
    def _on_done(self, result: ScanResult) -> None:
        self.finished.emit(result)
        self.deleteLater()
