"""Hearth's log file and the hooks that turn an unhandled exception into a report.

main() calls `setup_logging(verbose)` first, then, once the QApplication exists,
`install_excepthooks(callback)`. Everything goes to a rotating file under the
user's log folder (platformdirs); `--verbose` also mirrors it to the console and
lowers Hearth's own loggers to DEBUG. An exception nobody caught, on the GUI
thread or any other, is logged with its traceback and handed to the callback as
an ErrorReport, always on the GUI thread, so the callback may open a dialog.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import threading
import traceback
from dataclasses import dataclass
from logging.handlers import RotatingFileHandler
from pathlib import Path
from types import TracebackType
from typing import Callable

import platformdirs
from PySide6.QtCore import QObject, Qt, Signal, Slot

logger = logging.getLogger(__name__)

APP_NAME = "Hearth"
LOG_FILE_NAME = "hearth.log"
MAX_BYTES = 2_000_000
BACKUP_COUNT = 3
FORMAT = "%(asctime)s %(levelname)-8s [%(threadName)s] %(name)s: %(message)s"
OUR_LOGGERS = ("app", "engine", "resources", "__main__")
_HANDLER_NAMES = ("hearth-file", "hearth-console")

_log_path: Path | None = None


@dataclass(frozen=True)
class ErrorReport:
    """An unhandled exception, as the crash dialog shows it."""

    exc_type: str  # "ValueError"
    message: str
    traceback: str  # the whole formatted traceback
    thread_name: str
    log_path: Path | None

    @property
    def summary(self) -> str:
        return f"{self.exc_type}: {self.message}" if self.message else self.exc_type


def default_log_dir() -> Path:
    return platformdirs.user_log_path(APP_NAME, appauthor=False)


def current_log_path() -> Path | None:
    """The file setup_logging() opened, or None before it ran."""
    return _log_path


def setup_logging(verbose: bool = False, log_dir: Path | None = None, max_bytes: int = MAX_BYTES) -> Path:
    """Log to `<log dir>/hearth.log` (rotating); with `verbose`, also to stderr at DEBUG. Returns the file."""
    global _log_path
    shutdown_logging()
    path = _open_log_dir(log_dir or default_log_dir()) / LOG_FILE_NAME
    file_handler = RotatingFileHandler(path, maxBytes=max_bytes, backupCount=BACKUP_COUNT, encoding="utf-8")
    file_handler.set_name(_HANDLER_NAMES[0])
    handlers: list[logging.Handler] = [file_handler]
    if verbose and sys.stderr is not None:  # pythonw / a gui-script on Windows has no stderr
        console = logging.StreamHandler(sys.stderr)
        console.set_name(_HANDLER_NAMES[1])
        handlers.append(console)
    root = logging.getLogger()
    for handler in handlers:
        handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)
    root.setLevel(logging.INFO)
    # Only our own loggers go to DEBUG: libraries at DEBUG would bury what matters.
    for name in OUR_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.NOTSET)
    logging.captureWarnings(True)
    _log_path = path
    logger.info("logging to %s (verbose: %s)", path, verbose)
    return path


def shutdown_logging() -> None:
    """Close and remove the handlers setup_logging() added (tests, and a second setup)."""
    global _log_path
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h.get_name() in _HANDLER_NAMES]:
        root.removeHandler(handler)
        handler.close()
    _log_path = None


def _open_log_dir(preferred: Path) -> Path:
    """The preferred folder, or a temporary one when the home folder is read-only."""
    try:
        preferred.mkdir(parents=True, exist_ok=True)
        return preferred
    except OSError:
        fallback = Path(tempfile.gettempdir()) / "hearth-logs"
        fallback.mkdir(parents=True, exist_ok=True)
        return fallback


def make_report(
    exc_type: type[BaseException], exc: BaseException | None, tb: TracebackType | None, thread_name: str
) -> ErrorReport:
    text = "".join(traceback.format_exception(exc_type, exc, tb))
    return ErrorReport(exc_type.__name__, str(exc) if exc is not None else "", text, thread_name, _log_path)


class _ErrorRelay(QObject):
    """Carries reports to the thread it was created on (the GUI thread) through a queued signal."""

    raised = Signal(object)

    def __init__(self, on_error: Callable[[ErrorReport], None]) -> None:
        super().__init__()
        self._on_error = on_error
        # Queued even on the GUI thread: the dialog opens from the event loop, not from inside a hook.
        self.raised.connect(self._on_raised, Qt.ConnectionType.QueuedConnection)

    @Slot(object)
    def _on_raised(self, report: ErrorReport) -> None:
        try:
            self._on_error(report)
        except Exception:  # a failing reporter must not feed the hook that called it
            logger.exception("the error callback failed while reporting %s", report.summary)


def install_excepthooks(on_error: Callable[[ErrorReport], None]) -> Callable[[], None]:
    """Route uncaught exceptions (sys and threading hooks) to the log and `on_error`.

    Call it on the GUI thread. Returns a function that puts the previous hooks back.
    """
    relay = _ErrorRelay(on_error)
    previous_sys_hook, previous_thread_hook = sys.excepthook, threading.excepthook

    def sys_hook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if issubclass(exc_type, KeyboardInterrupt):
            previous_sys_hook(exc_type, exc, tb)
            return
        _report(relay, exc_type, exc, tb, threading.current_thread().name)

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if issubclass(args.exc_type, SystemExit):
            return  # the default hook ignores it too
        name = args.thread.name if args.thread is not None else "unknown thread"
        _report(relay, args.exc_type, args.exc_value, args.exc_traceback, name)

    sys.excepthook, threading.excepthook = sys_hook, thread_hook

    def uninstall() -> None:
        sys.excepthook, threading.excepthook = previous_sys_hook, previous_thread_hook
        relay.deleteLater()

    return uninstall


def _report(
    relay: _ErrorRelay,
    exc_type: type[BaseException],
    exc: BaseException | None,
    tb: TracebackType | None,
    thread_name: str,
) -> None:
    if exc is not None:
        logger.critical("unhandled exception in thread %s", thread_name, exc_info=(exc_type, exc, tb))
    else:  # threading's hook may hand over a type without an instance: nothing to format a traceback from
        logger.critical("unhandled %s in thread %s", exc_type.__name__, thread_name)
    report = make_report(exc_type, exc, tb, thread_name)
    if sys.stderr is not None and not _mirrors_to_console():
        print(f"Hearth: unexpected error: {report.summary} (details in {report.log_path})", file=sys.stderr)
    relay.raised.emit(report)


def _mirrors_to_console() -> bool:
    return any(h.get_name() == _HANDLER_NAMES[1] for h in logging.getLogger().handlers)
