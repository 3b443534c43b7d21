"""Settings, declared once (key, type, default, help), stored as JSON in the user config dir.

The one place that reads and writes the settings file. A corrupt or unreadable
file never stops the app: it starts with defaults, keeps the bad file as .bak
and says so once. `HEARTH_CONFIG_DIR` moves the file (tests use a tmp dir).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.settings.location import config_dir
from app.settings.secrets import LOCAL_API_KEY, load_api_key, load_secret, save_secret
from engine.paths import user_path
from engine.protocol import ModelConfig, SamplingParams
from engine.remote.errors import base_url
from engine.server.options import DEFAULT_PORT, ServerOptions
from engine.tools.results import DEFAULT_RESULT_LIMIT, DEFAULT_TIMEOUT_S

SCHEMA_VERSION = 1
FILE_NAME = "settings.json"
# Where earlier versions kept the local API's key, in plain text; it moves to secrets.py on the next load.
PLAIN_SERVER_KEY = "server.api_key"
RECENT_LIMIT = 10
_MODEL = {f.name: f.default for f in dataclasses.fields(ModelConfig)}
_SAMPLING = {f.name: f.default for f in dataclasses.fields(SamplingParams)}


@dataclass(frozen=True)
class Setting:
    key: str
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] = ()


def _model(name: str, kind: type, help: str, choices: tuple[Any, ...] = ()) -> Setting:
    return Setting(f"model.{name}", kind, _MODEL[name], help, choices)


def _sampling(name: str, kind: type, help: str, choices: tuple[Any, ...] = ()) -> Setting:
    return Setting(f"sampling.{name}", kind, _SAMPLING[name], help, choices)


# Defaults come from the engine's own dataclasses so the two can never disagree.
SETTINGS: tuple[Setting, ...] = (
    Setting("model.path", str, "", "The GGUF file or Hugging Face folder to load; empty: the bundled default."),
    Setting("model.backend", str, "auto", "llama.cpp, transformers, or a remote OpenAI-compatible server; "
            "auto: chosen from the model.", ("auto", "llamacpp", "hf", "remote")),
    _model("context_length", int, "Tokens one chat may hold."),
    _model("slots", int, "Chats answered at the same time."),
    _model("batch_tokens", int, "Tokens one forward pass takes (llama.cpp n_batch)."),
    Setting("model.threads", int, 0, "CPU threads; 0: the library's choice."),
    _model("gpu_layers", int, "Layers put on the GPU (llama.cpp): -1 all, 0 none."),
    _model("flash_attention", str, "Flash attention.", ("auto", "on", "off")),
    _model("kv_cache_type", str, "KV cache element type (llama.cpp).", ("f16", "q8_0", "q4_0")),
    _model("prompt_copy", str, "llama.cpp on the CPU: read long prompts with an F32 copy of a quantized model "
           "(2-2.5x faster, ~4 bytes a parameter more memory); auto: where the copy takes at most an eighth of the "
           "memory.", ("auto", "on", "off")),
    _model("quantization", str, "Quantize at load (transformers).", ("none", "int8", "nf4", "fp4")),
    _model("double_quant", bool, "4-bit: quantize the quantization constants too."),
    _model("dtype", str, "Compute dtype (transformers).", ("auto", "bfloat16", "float16", "float32")),
    _model("device", str, "auto, cpu, or cuda:N."),
    _model("fast_decode", str, "transformers on a GPU: decode steps from CUDA graphs; auto: when faster at load.",
           ("auto", "on", "off")),
    Setting("model.recent", list, [], "Models loaded before, newest first."),
    Setting("model.projectors", dict, {}, "The vision projector (mmproj GGUF) chosen for a GGUF model, by the model's "
            "path; a model not named here uses an mmproj-*.gguf beside it, if any."),
    Setting("remote.url", str, "", "Base URL of the remote OpenAI-compatible server, e.g. http://gpu-box:8000/v1 "
            "(its API key is kept in the system keyring or a private file, never here)."),
    Setting("remote.model", str, "", "The remote server's model to chat with (from its /v1/models); empty: its first."),
    _sampling("temperature", float, "Randomness; 0 picks the most likely token."),
    _sampling("top_k", int, "Sample among the k most likely tokens; 0: all."),
    _sampling("top_p", float, "Sample among the most likely tokens up to this probability mass."),
    _sampling("min_p", float, "Drop tokens less likely than this fraction of the top token."),
    _sampling("repeat_penalty", float, "Discourage repeating recent tokens; 1: off."),
    _sampling("max_new_tokens", int, "Longest answer, in tokens."),
    Setting("sampling.seed", int, -1, "Random seed; -1: a different one each time."),
    _sampling("speculative", str, "Speculative decoding by prompt lookup: guess the next tokens from the conversation "
              "and check them in the same pass. The answer is the same; it comes sooner where it repeats the "
              "conversation (edits, quotes). auto: a chat whose guesses keep missing stops guessing.", ("auto", "off")),
    Setting("chat.system_prompt", str, "You are a helpful assistant.", "The system prompt of new chats."),
    Setting("chat.presets", dict, {}, "Named chat settings (system prompt, temperature, top-p, max tokens) "
            "to pick in a chat's panel."),
    Setting("window.sidebar_visible", bool, True, "Show the chat sidebar (Ctrl+B)."),
    Setting("window.sidebar_width", int, 240, "Width of the chat sidebar, in pixels."),
    Setting("window.font_size", float, 0.0, "Text size in points (Ctrl++ / Ctrl+-); 0: the system's."),
    Setting("server.enabled", bool, False, "Serve the loaded model over an OpenAI-compatible HTTP API."),
    Setting("server.host", str, "127.0.0.1", "Address the API listens on; 127.0.0.1: this computer only "
            "(any other address needs an API key)."),
    Setting("server.port", int, DEFAULT_PORT, "TCP port of the API."),
    Setting("server.cors_origins", list, [], "Web page origins (https://host:port) that may call the API "
            "from a browser; none by default."),
    # MCP tools in the chats; the servers themselves are in mcp.json beside this file (engine/tools/config.py).
    Setting("tools.disabled_servers", list, [], "MCP servers of mcp.json that chats do not use."),
    Setting("tools.disabled_tools", list, [], "Tools (server/tool) the model is not offered."),
    Setting("tools.always_allow", list, [], "Tools (server/tool) that run without asking; revoke them in Tools."),
    Setting("tools.timeout_s", float, DEFAULT_TIMEOUT_S, "Seconds a tool call may take before it is cut off."),
    Setting("tools.result_limit", int, DEFAULT_RESULT_LIMIT, "Characters of one tool result the model is given; "
            "a longer result is cut with a note."),
    Setting("tools.max_rounds", int, 8, "Tool calls one answer may make in a row before the model must answer."),
    # Attached documents (app/settings/documents_section.py shows them; app/chat/document_vectors.py uses them)
    Setting("documents.embeddings", str, "off", "Search attached files by meaning as well as words: off (words, "
            "BM25), gguf (the GGUF embedding model below), chat_model (the chat's own model).",
            ("off", "gguf", "chat_model")),
    Setting("documents.embedding_model", str, "", "The GGUF embedding model documents are searched with."),
    # Several models at once (app/settings/models_section.py shows them; app/settings/models_options.py uses them)
    Setting("models.keep_alive_min", float, 15.0, "Minutes an idle model stays loaded; -1: forever."),
    Setting("models.budget_gib", float, 0.0, "Memory all loaded models may use together, in GiB; 0: what the "
            "estimate says fits this machine."),
    Setting("server.load_by_name", str, "local", "An API request naming a model of the library loads it: local (when "
            "the API serves this computer only), on, or off.", ("local", "on", "off")),
    Setting("server.aliases", list, [], "Names clients send and the model each means, as name=model lines."),
    Setting("server.unknown_model_is_default", bool, False, "A model name the API does not know gets the model "
            "loaded last instead of a 404."),
)
BY_KEY = {setting.key: setting for setting in SETTINGS}


def settings_path() -> Path:
    return config_dir() / FILE_NAME


def _valid(setting: Setting, value: Any) -> bool:
    if setting.type is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif setting.type is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif setting.type is list:
        ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
    elif setting.type is dict:  # named groups of plain values (presets): JSON objects of JSON values
        ok = isinstance(value, dict) and all(isinstance(key, str) for key in value)
    else:
        ok = isinstance(value, setting.type)
    return ok and (not setting.choices or value in setting.choices)


class Settings:
    """Current values by key; `message` is set once when the file had to be replaced."""

    def __init__(self, path: Path, values: dict[str, Any] | None = None, message: str = "") -> None:
        self.path = path
        self.message = message
        self._values = {s.key: _copy(s.default) for s in SETTINGS}
        for key, value in (values or {}).items():
            if key in BY_KEY and _valid(BY_KEY[key], value):
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
        if not _valid(setting, value):
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
    values = {name: settings.get(f"model.{name}") for name in _MODEL if f"model.{name}" in BY_KEY}
    values.update(path=path, backend=backend, threads=settings.get("model.threads") or None, gguf_file=gguf_file,
                  mmproj=settings.get("model.projectors").get(path) if backend == "llamacpp" else None)
    return ModelConfig(**values)


def remote_config(settings: Settings, api_key: str | None = None) -> ModelConfig:
    """The remote backend: the server's base URL as the path, its model, the key from outside this file."""
    return ModelConfig(path=base_url(settings.get("remote.url")), backend="remote",
                       remote_model=settings.get("remote.model").strip(), slots=settings.get("model.slots"),
                       api_key=load_api_key() if api_key is None else api_key)


def sampling_params(settings: Settings) -> SamplingParams:
    values = {name: settings.get(f"sampling.{name}") for name in _SAMPLING if f"sampling.{name}" in BY_KEY}
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
                         unknown_model_is_default=settings.get("server.unknown_model_is_default"))


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
