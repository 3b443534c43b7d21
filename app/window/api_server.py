"""The window's local API server: started, stopped and restarted as the settings say, on the bridge's engine.

The server is Qt-free (engine/server); this QObject owns it for the window. It
attaches to the engine the bridge owns (`bridge.engine_host`), so API requests
join the tabs' batch. The count of requests in flight arrives on the server's
own thread and crosses to the GUI thread through a queued signal.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from engine.server.options import ServerOptions, ServerOptionsError

if TYPE_CHECKING:
    from app.bridge import EngineBridge
    from engine.server.server import ApiServer

log = logging.getLogger(__name__)


class ApiServerControl(QObject):
    state_changed = Signal()  # started, stopped or failed: url / error changed
    in_flight_changed = Signal(int)  # requests being answered or waiting

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._server: ApiServer | None = None
        self.options: ServerOptions | None = None
        self.url = ""
        self.error = ""
        self.in_flight = 0
        self.in_flight_changed.connect(self._on_in_flight_changed)

    @property
    def running(self) -> bool:
        return self._server is not None and self._server.running

    def apply(self, options: ServerOptions | None) -> bool:
        """Serve with these options (None: stop); False with `error` set when it could not start."""
        self.stop()
        self.options = options
        if options is None:
            self.state_changed.emit()
            return True
        from engine.server.server import ApiServer, ServerStartError  # the web stack: only when serving

        self._bridge.start()  # the engine the API joins; idle until a model is loaded
        try:
            self._server = ApiServer(self._bridge.engine_host, options, on_in_flight=self.in_flight_changed.emit)
            self.url = self._server.start()
        except (ServerStartError, ServerOptionsError) as error:
            self._server, self.error = None, _with_hint(error)
            log.warning("the local API did not start: %s", self.error)
            self.state_changed.emit()
            return False
        log.info("the local API serves at %s", self.url)
        self.state_changed.emit()
        return True

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


def _with_hint(error: Exception) -> str:
    hint = " Choose another port in Model > Settings… (Local API)." if getattr(error, "port_in_use", False) else ""
    return f"{error}{hint}"
