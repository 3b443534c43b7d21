"""Settings, stored as JSON in the user config dir; what there is to set is declared in declarations.py.

The one place that reads and writes the settings file. A corrupt or unreadable
file never stops the app: it starts with defaults, keeps the bad file as .bak
and says so once. `HEARTH_CONFIG_DIR` moves the file (tests use a tmp dir).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from app.settings.declarations import BY_KEY, MODEL_DEFAULTS, SAMPLING_DEFAULTS, SETTINGS
from app.settings.location import config_dir
from app.settings.secrets import LOCAL_API_KEY, load_api_key, load_secret, save_secret
from engine.catalog.draft_kind import draft_for
from engine.paths import user_path
from engine.protocol import ModelConfig, SamplingParams
from engine.remote.errors import base_url
from engine.server.options import ServerOptions

SCHEMA_VERSION = 1
FILE_NAME = "settings.json"
# Where earlier versions kept the local API's key, in plain text; it moves to secrets.py on the next load.
PLAIN_SERVER_KEY = "server.api_key"
RECENT_LIMIT = 10


def settings_path() -> Path:
    return config_dir() / FILE_NAME


class Settings:
    """Current values by key; `message` is set once when the file had to be replaced."""

    def __init__(self, path: Path, values: dict[str, Any] | None = None, message: str = "") -> None:
        self.path = path
        self.message = message
        self._values = {s.key: _copy(s.default) for s in SETTINGS}
        for key, value in (values or {}).items():
            if key in BY_KEY and BY_KEY[key].accepts(value):
                self._values[key] = float(value) if BY_KEY[key].type is float else _copy(value)

    @classmethod
    def load(cls, path: Path | None = None) -> Settings:
        path = path or settings_path()
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(path)
        except (OSError, UnicodeDecodeError) as error:
            return cls._replace_bad_file(path, f"it could not be read ({error})")
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or not isinstance(data.get("settings"), dict):
                raise ValueError("it has no settings object")
        except ValueError as error:
            return cls._replace_bad_file(path, f"it is not valid ({error})")
        settings = cls(path, data["settings"])
        if PLAIN_SERVER_KEY in data["settings"]:
            settings._move_plain_server_key(data["settings"][PLAIN_SERVER_KEY])
        return settings

    def _move_plain_server_key(self, value: Any) -> None:
        """A local API key an earlier version wrote into this file goes to the keyring (or a private file);
        the file is written again without it."""
        if isinstance(value, str) and value.strip():
            save_secret(LOCAL_API_KEY, value)
        self.save()

    @classmethod
    def _replace_bad_file(cls, path: Path, why: str) -> Settings:
        backup = path.with_name(path.name + ".bak")
        try:
            os.replace(path, backup)
            kept = f"The old file was kept as {backup}."
        except OSError:
            kept = "The old file could not be moved aside and will be overwritten."
        settings = cls(path, message=f"Your settings file {path} was not used because {why}. "
                                     f"Hearth started with default settings. {kept}")
        settings.save()  # written at once, so the message is shown only this one time
        return settings

    def get(self, key: str) -> Any:
        return _copy(self._values[key])

    def set(self, key: str, value: Any) -> None:
        setting = BY_KEY[key]  # an unknown key is a programming error: KeyError
        if setting.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not setting.accepts(value):
            raise ValueError(f"{key} cannot be {value!r}: {setting.help}")
        self._values[key] = _copy(value)

    def as_dict(self) -> dict[str, Any]:
        return {key: _copy(value) for key, value in self._values.items()}

    def save(self) -> None:
        """Write atomically: a crash mid-write must not leave a corrupt file."""
        data = {"schema_version": SCHEMA_VERSION, "settings": self._values}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_name(self.path.name + ".tmp")
            temporary.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError as error:
            self.message = f"Settings could not be saved to {self.path} ({error}); they last until Hearth quits."

    def add_recent(self, path: str) -> None:
        recent = [path] + [p for p in self._values["model.recent"] if p != path]
        self._values["model.recent"] = recent[:RECENT_LIMIT]


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return copy.deepcopy(value)
    return list(value) if isinstance(value, list) else value


# ---------------------------------------------------------------- to the engine


def model_config(settings: Settings, default_path: str | None = None) -> ModelConfig:
    """The ModelConfig the settings describe; an empty path means the bundled default. Paths reach the engine absolute."""
    backend = settings.get("model.backend")
    if backend == "remote":
        return remote_config(settings)
    path = user_path(settings.get("model.path") or default_path or "")
    if backend == "auto":
        backend = "hf" if path and Path(path).is_dir() else "llamacpp"
    gguf_file = path if backend == "hf" and path.lower().endswith(".gguf") else None
    values = {name: settings.get(f"model.{name}") for name in MODEL_DEFAULTS if f"model.{name}" in BY_KEY}
    values.update(path=path, backend=backend, threads=settings.get("model.threads") or None, gguf_file=gguf_file,
                  mmproj=settings.get("model.projectors").get(path) if backend == "llamacpp" else None,
                  draft_model=draft_for(backend, settings.get("model.draft_models").get(path)))
    return ModelConfig(**values)


def remote_config(settings: Settings, api_key: str | None = None) -> ModelConfig:
    """The remote backend: the server's base URL as the path, its model, the key from outside this file."""
    return ModelConfig(path=base_url(settings.get("remote.url")), backend="remote",
                       remote_model=settings.get("remote.model").strip(), slots=settings.get("model.slots"),
                       api_key=load_api_key() if api_key is None else api_key)


def sampling_params(settings: Settings) -> SamplingParams:
    values = {name: settings.get(f"sampling.{name}") for name in SAMPLING_DEFAULTS if f"sampling.{name}" in BY_KEY}
    seed = values.pop("seed")
    return SamplingParams(**values, seed=None if seed < 0 else seed)


def system_prompt(settings: Settings) -> str:
    return str(settings.get("chat.system_prompt"))


def server_options(settings: Settings) -> ServerOptions | None:
    """What the API server should listen with; None while it is switched off."""
    if not settings.get("server.enabled"):
        return None
    return ServerOptions(host=settings.get("server.host").strip(), port=settings.get("server.port"),
                         api_key=load_secret(LOCAL_API_KEY),
                         cors_origins=tuple(settings.get("server.cors_origins")),
                         allow_load_by_name={"on": True, "off": False}.get(settings.get("server.load_by_name")),
                         aliases=parse_aliases(settings.get("server.aliases"))[0],
                         unknown_model_is_default=settings.get("server.unknown_model_is_default"),
                         stt_model=_voice_path(settings, "voice.stt_model"),
                         tts_voice=_voice_path(settings, "voice.tts_voice"))


def _voice_path(settings: Settings, key: str) -> str:
    path = settings.get(key).strip()
    return user_path(path) if path else ""


def parse_aliases(lines: list[str]) -> tuple[tuple[tuple[str, str], ...], list[str]]:
    """name=model lines as (name, model) pairs, and the lines that are not of that form."""
    pairs, bad = [], []
    for line in (line.strip() for line in lines):
        name, equals, model = line.partition("=")
        if equals and name.strip() and model.strip():
            pairs.append((name.strip(), model.strip()))
        elif line:
            bad.append(line)
    return tuple(pairs), bad


def engine_inputs(settings: Settings, default_path: str | None = None) -> tuple[ModelConfig, SamplingParams, str]:
    """Everything the engine and new chats need, in one call."""
    return model_config(settings, default_path), sampling_params(settings), system_prompt(settings)
