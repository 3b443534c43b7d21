"""The local OpenAI-compatible HTTP API and `hearth-serve`: Qt-free, beside the engine.

ApiServer (server.py) runs uvicorn with the Starlette app (app.py) in its own
thread and asyncio loop, as one client of an EngineHost (engine/clients.py):
its requests join the same continuous batch as the window's tabs. turns.py
carries engine events to each request's asyncio.Queue; schema.py checks
requests and maps them onto the engine's Submit; responses.py writes OpenAI's
JSON; errors.py its error shape; options.py what the server is told; cli.py is
`hearth-serve`. Only options.py is imported up front: the web stack loads when
a server is made, so the window starts as fast without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.server.options import ServerOptions, ServerOptionsError

if TYPE_CHECKING:
    from engine.server.server import ApiServer, ServerStartError

__all__ = ["ApiServer", "ServerOptions", "ServerOptionsError", "ServerStartError"]


def __getattr__(name: str) -> Any:
    if name in ("ApiServer", "ServerStartError"):
        from engine.server import server

        return getattr(server, name)
    raise AttributeError(name)
