"""ApiServer: uvicorn serving the API app in its own thread and asyncio loop, one client of the engine.

`start()` binds the socket on the caller's thread, so a port that is taken is
an immediate ServerStartError with a message a person can act on, and returns
once the server accepts requests. `stop()` ends every answer in flight with a
finish reason (streams get their last chunk and `data: [DONE]`), then lets
uvicorn close the connections and joins the thread. The EngineHost is not
stopped: whoever started it (the window, or `hearth-serve`) does that.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import sys
import threading
from typing import Callable

import uvicorn

from engine.clients import EngineHost
from engine.server.app import build_app
from engine.server.options import ServerOptions
from engine.server.turns import TurnDesk

log = logging.getLogger(__name__)
START_TIMEOUT_S = 30.0


class ServerStartError(RuntimeError):
    """The server could not start; the message says why (port taken, bad address...)."""

    def __init__(self, message: str, port_in_use: bool = False) -> None:
        super().__init__(message)
        self.port_in_use = port_in_use


class ApiServer:
    def __init__(self, host: EngineHost, options: ServerOptions,
                 on_in_flight: Callable[[int], None] | None = None) -> None:
        options.check()
        self.options = options
        self._on_in_flight = on_in_flight
        self._idle = threading.Event()
        self._idle.set()
        self.desk = TurnDesk(host, options.max_waiting, self._count_changed)
        self._ready = threading.Event()
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._aio: asyncio.AbstractEventLoop | None = None
        self._uvicorn: uvicorn.Server | None = None
        self.port = options.port

    @property
    def url(self) -> str:
        """The base URL clients use, ending in /v1."""
        return self.options.url(self.port)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def in_flight(self) -> int:
        return self.desk.in_flight

    def start(self) -> str:
        """Listen and serve; returns the URL. Raises ServerStartError."""
        self._socket = bind(self.options.host, self.options.port)
        self.port = self._socket.getsockname()[1]
        app = build_app(self.desk, self.options, on_startup=self._ready.set)
        # No log_config: uvicorn would reconfigure the window's logging. h11 and asyncio by name, for the bundle.
        config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on", ws="none", http="h11",
                                loop="asyncio", timeout_graceful_shutdown=max(1, round(self.options.graceful_shutdown_s)))
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name="hearth-api", daemon=True)
        self._thread.start()
        while not self._ready.wait(0.05):
            if not self._thread.is_alive():
                raise ServerStartError(f"The API server on {self.url} stopped while starting; see the log.")
        return self.url

    def _run(self) -> None:
        assert self._uvicorn is not None and self._socket is not None
        try:
            asyncio.run(self._serve())
        except BaseException:  # uvicorn exits through SystemExit when it cannot start
            log.exception("the API server stopped")
        finally:
            self._socket.close()

    async def _serve(self) -> None:
        assert self._uvicorn is not None and self._socket is not None
        self._aio = asyncio.get_running_loop()
        self.desk.open_desk(self._aio)
        try:
            await self._uvicorn.serve(sockets=[self._socket])
        finally:
            self.desk.close_desk()

    def stop(self, timeout: float = 10.0) -> None:
        """End answers in flight with a finish reason, close connections, join the thread; safe twice."""
        thread, aio, server = self._thread, self._aio, self._uvicorn
        if thread is None or server is None:
            return
        if aio is not None and thread.is_alive():
            aio.call_soon_threadsafe(self.desk.cancel_all)
            self._idle.wait(self.options.graceful_shutdown_s)  # each stream sends its last chunk
            server.should_exit = True
        thread.join(timeout)
        self._thread = None

    def _count_changed(self, count: int) -> None:
        if count == 0:
            self._idle.set()
        else:
            self._idle.clear()
        if self._on_in_flight is not None:
            self._on_in_flight(count)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port, or ServerStartError saying what is wrong."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError) as error:
        raise ServerStartError(f"{host!r} is not an address this computer can listen on ({error}).") from None
    sock = socket.socket(family, kind, proto)
    try:
        if sys.platform != "win32":  # Windows' SO_REUSEADDR would let two servers share the port
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as error:
        sock.close()
        if error.errno in (errno.EADDRINUSE, getattr(errno, "WSAEADDRINUSE", -1)):
            raise ServerStartError(f"Port {port} on {host} is already in use by another program.",
                                   port_in_use=True) from None
        if error.errno in (errno.EACCES, errno.EPERM):
            raise ServerStartError(f"This user may not listen on port {port} (ports below 1024 need "
                                   "special rights).") from None
        raise ServerStartError(f"Could not listen on {host}:{port}: {error.strerror or error}.") from None
    sock.setblocking(False)
    return sock
