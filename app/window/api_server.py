"""The window's local API server: started, stopped and restarted as the settings say, on the bridge's engine.

The server is Qt-free (engine/server); this QObject owns it for the window. It
attaches to the engine the bridge owns (`bridge.engine_host`), so API requests
join the tabs' batch. The count of requests in flight arrives on the server's
own thread and crosses to the GUI thread through a queued signal. It keeps the
status bar's indicator and the gauge up to date, and says why when the server
could not start: in the settings dialog if that is open, and in the status bar.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QStatusBar

from app.status.gauge import GaugeWidget
from app.status.server_indicator import ServerIndicator
from engine.server.options import ServerOptions, ServerOptionsError

if TYPE_CHECKING:
    from app.bridge import EngineBridge
    from app.settings.dialog import SettingsDialog
    from engine.server.server import ApiServer

log = logging.getLogger(__name__)


class ApiServerControl(QObject):
    state_changed = Signal()  # started, stopped or failed: url / error changed
    in_flight_changed = Signal(int)  # requests being answered or waiting

    def __init__(self, bridge: EngineBridge, indicator: ServerIndicator, gauge: GaugeWidget, bar: QStatusBar,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._indicator, self._gauge, self._bar = indicator, gauge, bar
        self._server: ApiServer | None = None
        self.options: ServerOptions | None = None
        self.url = ""
        self.error = ""
        self.in_flight = 0
        self.in_flight_changed.connect(self._on_in_flight_changed)
        indicator.copied.connect(lambda url: bar.showMessage(f"Copied {url}", 3000))
        indicator.retry_requested.connect(lambda: self.serve(self.options))

    def serve(self, options: ServerOptions | None, dialog: SettingsDialog | None = None) -> bool:
        """(Re)start or stop the API; a failure is said in `dialog` if it is open, and in the status bar."""
        if self.apply(options):
            return True
        if dialog is not None and dialog.isVisible():
            dialog.show_server_error(self.error)
        self._bar.showMessage(f"The local API did not start: {self.error}", 15_000)
        return False

    @property
    def running(self) -> bool:
        return self._server is not None and self._server.running

    def apply(self, options: ServerOptions | None) -> bool:
        """Serve with these options (None: stop); False with `error` set when it could not start."""
        self.stop()
        self.options = options
        if options is None:
            self._changed()
            return True
        try:
            from engine.server.server import ApiServer, ServerStartError  # the web stack: only when serving
        except ImportError as error:
            self.error = f"The local API needs the server extra: pip install 'hearth-chat[server]' ({error})."
            self._changed()
            return False
        self._bridge.start()  # the engine the API joins; idle until a model is loaded
        try:
            self._server = ApiServer(self._bridge.engine_host, options, on_in_flight=self.in_flight_changed.emit)
            self.url = self._server.start()
        except (ServerStartError, ServerOptionsError) as error:
            self._server, self.error = None, _with_hint(error)
            log.warning("the local API did not start: %s", self.error)
            self._changed()
            return False
        log.info("the local API serves at %s", self.url)
        self._changed()
        return True

    def _changed(self) -> None:
        self._show()
        self.state_changed.emit()

    def retry(self) -> bool:
        return self.apply(self.options)

    def stop(self) -> None:
        """Streams in flight end with a finish reason; safe to call twice."""
        server, self._server = self._server, None
        if server is not None:
            server.stop()
        self.url, self.error, self.in_flight = "", "", 0

    def _on_in_flight_changed(self, count: int) -> None:
        if self._server is not None:
            self.in_flight = count
        self._show()

    def _show(self) -> None:
        self._indicator.show_state(self.url, self.in_flight, self.error)
        self._gauge.set_api(self.url, self.in_flight)


def _with_hint(error: Exception) -> str:
    hint = " Choose another port in Model > Settings… (Local API)." if getattr(error, "port_in_use", False) else ""
    return f"{error}{hint}"
