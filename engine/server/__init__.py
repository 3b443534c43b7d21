"""The local OpenAI-compatible HTTP API and `hearth-serve`: Qt-free, beside the engine.

ApiServer (server.py) runs uvicorn with the Starlette app (app.py) in its own
thread and asyncio loop, as one client of an EngineHost (engine/clients.py):
its requests join the same continuous batch as the window's tabs. turns.py
carries engine events to each request's asyncio.Queue; schema.py checks
requests and maps them onto the engine's Submit; responses.py writes OpenAI's
JSON; errors.py its error shape; cli.py is `hearth-serve`.
"""

from engine.server.options import ServerOptions, ServerOptionsError
from engine.server.server import ApiServer, ServerStartError

__all__ = ["ApiServer", "ServerOptions", "ServerOptionsError", "ServerStartError"]
