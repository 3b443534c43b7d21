"""The window's MCP tools: mcp.json and the Tools settings, in front of one engine ToolManager.

The manager (engine/tools) runs the SDK on its own thread and answers with futures; this object
turns their completion into signals on the GUI thread. Servers start only when a chat first needs
their tools (`prepare`), and every one is stopped at `shutdown`. Which servers and tools are on,
and which tools run without asking, are settings; the approval itself is the chat's part. Secrets
that mcp.json names as `${keyring:NAME}` are read from the keyring (or a private file) as a server
starts; `keep_secrets_in_keyring` moves the plain ones there.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from concurrent.futures import Future

from PySide6.QtCore import QObject, Qt, Signal

from app.history.notes import HistoryTools
from app.settings.location import config_dir
from app.settings.secrets import load_secret, mcp_secret, save_secret, storage
from app.settings.store import Settings
from app.tools.builtin import BUILTIN_SERVER, BuiltinTools
from engine.protocol import ToolSpec
from engine.tools.config import FILE_NAME, McpConfigError, ServerConfig, read_config
from engine.tools.manager import ServerTools, ToolManager
from engine.tools.results import ToolResult, error_result
from engine.tools.secrets import move_secrets

Ready = Callable[[], None]


def tool_key(server: str, tool: str) -> str:
    """How the settings name a tool: "server/tool"."""
    return f"{server}/{tool}"


class ToolService(QObject):
    """The servers, their listed tools, and calls whose results arrive as `call_finished`."""

    call_finished = Signal(object, object)  # the caller's token, ToolResult
    tools_listed = Signal(object)  # ServerTools
    _listed = Signal(object)  # ServerTools, from the tools thread
    _called = Signal(object, object)  # token, Future, from the tools thread

    def __init__(self, settings: Settings, parent: QObject | None = None, history: HistoryTools | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.builtin = BuiltinTools(settings, history)  # Hearth's own tools, offered as the server "built-in"
        self.config_error = ""
        self.servers: tuple[ServerConfig, ...] = ()
        self.listed: dict[str, ServerTools] = {}
        self._manager: ToolManager | None = None
        self._waiting: list[Ready] = []
        self._listing: set[str] = set()
        # Queued even when emitted on this thread (a future already done runs its callback at once): a
        # listing or a result always arrives from the event loop, never inside the prepare or call that
        # asked for it, so a chat never hears of it before it has finished asking.
        self._listed.connect(self._on_listed, Qt.ConnectionType.QueuedConnection)
        self._called.connect(self._on_called, Qt.ConnectionType.QueuedConnection)
        self.reload()

    @property
    def path(self) -> str:
        return str(config_dir() / FILE_NAME)

    def reload(self) -> None:
        """Read mcp.json again (after Import or an edit); servers gone or changed are stopped."""
        try:
            self.servers, self.config_error = read_config(config_dir() / FILE_NAME), ""
        except McpConfigError as error:
            self.servers, self.config_error = (), str(error)
        names = {server.name: server for server in self.servers}
        self.listed = {name: tools for name, tools in self.listed.items() if name in names}
        if self._manager is not None:
            self._manager.set_servers(self.servers)

    # ------------------------------------------------------------ what the settings say

    def enabled_servers(self) -> list[ServerConfig]:
        disabled = set(self.settings.get("tools.disabled_servers"))
        return [server for server in self.servers if server.name not in disabled]

    def tool_enabled(self, server: str, tool: str) -> bool:
        return tool_key(server, tool) not in self.settings.get("tools.disabled_tools")

    def always_allowed(self, server: str, tool: str) -> bool:
        return tool_key(server, tool) in self.settings.get("tools.always_allow")

    def allow_always(self, server: str, tool: str) -> None:
        keys = self.settings.get("tools.always_allow")
        if tool_key(server, tool) not in keys:
            self.settings.set("tools.always_allow", keys + [tool_key(server, tool)])
            self.settings.save()

    def revoke(self, key: str) -> None:
        self.settings.set("tools.always_allow", [k for k in self.settings.get("tools.always_allow") if k != key])
        self.settings.save()

    def keep_secrets_in_keyring(self) -> str:
        """Move mcp.json's plain secret-looking env and header values to the keyring; says where they went."""
        target = config_dir() / FILE_NAME
        if self.config_error or not target.exists():
            return self.config_error
        try:
            text, moved = move_secrets(target.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):  # changed since it was read: say what is wrong now
            self.reload()
            return self.config_error or f"{target} could not be read."
        if not moved:
            return ""
        for name, value in moved.items():
            save_secret(mcp_secret(name), value)
            if load_secret(mcp_secret(name)) != value.strip():
                return f'The secret "{name}" could not be stored; mcp.json was left as it was.'
        target.write_text(text, encoding="utf-8")
        self.reload()
        kept = storage(mcp_secret(next(iter(moved))))
        where = (kept.description.split(",")[0].replace("Stored", "They are") if kept.kind == "keyring" else
                 f"There is no system keyring here: they are in files readable by you only, in {target.parent}")
        return f"{len(moved)} secret(s) moved out of mcp.json, which now names each as ${{keyring:NAME}}. {where}."

    # ------------------------------------------------------------ what a chat uses

    def prepare(self, ready: Ready) -> None:
        """`ready` is called (at once, or once listed) when every enabled server has been listed or has failed."""
        missing = [server for server in self.enabled_servers() if server.name not in self.listed]
        if not missing:
            ready()
            return
        self._waiting.append(ready)
        for server in missing:
            self.list_server(server.name)

    def list_server(self, name: str) -> None:
        """Start the server if needed and list its tools (`tools_listed` follows)."""
        if name in self._listing:
            return
        self._listing.add(name)
        manager = self._ensure_manager()
        if manager is None:
            self._listed.emit(ServerTools(name, error=self.config_error))
            return
        manager.list_tools(name).add_done_callback(lambda future: self._listed.emit(_listed_or_error(name, future)))

    def offered(self) -> dict[str, tuple[str, ToolSpec]]:
        """tool name -> (server, spec) of every enabled tool; the built-in ones first, then the first server
        wins a name two share."""
        offered = {tool.name: (BUILTIN_SERVER, tool.spec) for tool in self.builtin.enabled()}
        for server in self.enabled_servers():
            for spec in self.listed.get(server.name, ServerTools(server.name)).tools:
                if self.tool_enabled(server.name, spec.name):
                    offered.setdefault(spec.name, (server.name, spec))
        return offered

    def failures(self) -> list[str]:
        return [tools.error for name, tools in self.listed.items() if tools.error
                and name in {server.name for server in self.enabled_servers()}]

    def call(self, token: object, server: str, tool: str, arguments: str) -> Future[ToolResult] | None:
        """Run an approved call; `call_finished(token, result)` follows unless it is cancelled first."""
        if server == BUILTIN_SERVER:
            return self.call_builtin(token, tool, arguments)
        manager = self._ensure_manager()
        if manager is None:
            failed: Future[ToolResult] = Future()
            failed.set_result(error_result(self.config_error))
            self._called.emit(token, failed)
            return None
        future = manager.call(server, tool, arguments, self.settings.get("tools.timeout_s"),
                              self.settings.get("tools.result_limit"))
        future.add_done_callback(lambda done: self._called.emit(token, done))
        return future

    def call_builtin(self, token: object, tool: str, arguments: str, chat_id: str = "",
                     also: Collection[str] = ()) -> Future[ToolResult]:
        """Run an approved call of a built-in tool for the chat `chat_id` (`also`: tools research mode runs though
        the settings leave them off); `call_finished` follows, as for `call`."""
        future = self.builtin.call(tool, arguments, chat_id, also)
        future.add_done_callback(lambda done: self._called.emit(token, done))
        return future

    def shutdown(self) -> None:
        self.builtin.shutdown()
        if self._manager is not None:
            self._manager.shutdown()
            self._manager = None

    # ------------------------------------------------------------ internals

    def _ensure_manager(self) -> ToolManager | None:
        if self._manager is None:
            try:
                import mcp  # noqa: F401 - the SDK is an extra: say so where the user looks
            except ImportError:
                self.config_error = "MCP tools need the mcp package: pip install 'hearth-chat[tools]'."
                return None
            self._manager = ToolManager(self.servers, secrets=_stored_secret)
        return self._manager

    def _on_listed(self, tools: ServerTools) -> None:
        self._listing.discard(tools.server)
        self.listed[tools.server] = tools
        self.tools_listed.emit(tools)
        if not self._listing:
            waiting, self._waiting = self._waiting, []
            for ready in waiting:
                ready()

    def _on_called(self, token: object, future: Future[ToolResult]) -> None:
        if future.cancelled():
            return
        error = future.exception()
        self.call_finished.emit(token, error_result(f"The call failed: {error}") if error else future.result())


def _stored_secret(name: str) -> str:
    """The value of `${keyring:NAME}`, read as a server starts (in a worker thread of the tools loop)."""
    return load_secret(mcp_secret(name))


def _listed_or_error(name: str, future: Future[ServerTools]) -> ServerTools:
    if future.cancelled() or future.exception() is not None:
        return ServerTools(name, error=f'The tool server "{name}" could not be listed: {future.exception()}')
    return future.result()
