"""What the API server is told: where to listen, the key, the origins, its limits."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.loopback import is_loopback
from engine.protocol import ModelConfig
from engine.server.web_tools import ServerTools

DEFAULT_PORT = 8642
API_CHAT_PREFIX = "api-"  # the chat ids of API requests (a tab's id is bare hex): the gauge names them so


__all__ = ["DEFAULT_PORT", "ServerOptions", "ServerOptionsError", "is_loopback"]


class ServerOptionsError(ValueError):
    """Options that must not be used as given; the message says what to change."""


@dataclass(frozen=True)
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT  # 0: any free port (tests)
    api_key: str = ""  # empty: no key asked (only on this computer's loopback address)
    cors_origins: tuple[str, ...] = ()  # browser origins allowed to call the API; none by default
    max_body_bytes: int = 4 * 2**20
    max_waiting: int = 16  # requests queued beyond the engine's slots before 503
    graceful_shutdown_s: float = 5.0
    # Several models (docs/api.md "Models"): which ones a request may name, and how they are loaded.
    models_dir: str = ""  # hearth-serve --models-dir: the models under it; empty: the app's library
    library: tuple[str, ...] = ()  # more models to offer (the app's recently used ones)
    allow_load_by_name: bool | None = None  # a request naming a library model loads it; None: on 127.0.0.1 only
    aliases: tuple[tuple[str, str], ...] = ()  # (name clients send, the model it means)
    unknown_model_is_default: bool = False  # any other name gets the model loaded last (llama-server's way)
    load_defaults: ModelConfig = field(default_factory=lambda: ModelConfig(path=""))  # slots, context, threads
    # Voice (docs/api.md "Audio"): empty: /v1/audio/* answer 404 saying how to set them
    stt_model: str = ""  # hearth-serve --stt-model: a faster-whisper model folder
    tts_voice: str = ""  # hearth-serve --tts-voice: a Piper voice's .onnx
    voice_threads: int = 2  # CPU threads of each voice model
    max_audio_bytes: int = 25 * 2**20  # an upload to /v1/audio/transcriptions (OpenAI's own limit)
    # The tools the server runs itself (hearth-serve --tools web; engine/server/web_tools.py); none by default
    server_tools: ServerTools = field(default_factory=ServerTools)

    @property
    def loads_by_name(self) -> bool:
        return self.allow_load_by_name if self.allow_load_by_name is not None else is_loopback(self.host)

    def check(self) -> None:
        """Raise ServerOptionsError for a combination that would be unsafe or cannot work."""
        if not self.host.strip():
            raise ServerOptionsError("The server needs a host address to listen on, such as 127.0.0.1.")
        if not 0 <= self.port <= 65535:
            raise ServerOptionsError(f"Port {self.port} is not a TCP port (0 to 65535).")
        if not is_loopback(self.host) and not self.api_key:
            raise ServerOptionsError(
                f"Listening on {self.host} lets other computers use the model: set an API key first "
                "(or listen on 127.0.0.1, this computer only).")
        if any(origin.strip() == "*" for origin in self.cors_origins) and not self.api_key:
            raise ServerOptionsError("Allowing every web page (*) to call the API needs an API key.")

    def url(self, port: int | None = None) -> str:
        host = self.host if ":" not in self.host or self.host.startswith("[") else f"[{self.host}]"
        if host in ("0.0.0.0", "[::]"):
            host = "127.0.0.1" if host == "0.0.0.0" else "[::1]"  # where a client on this computer reaches it
        return f"http://{host}:{self.port if port is None else port}/v1"
