"""Settings: declared once, saved as JSON with a schema version, robust to a corrupt file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.settings.store import SCHEMA_VERSION, SETTINGS, Settings, engine_inputs, settings_path
from engine.protocol import ModelConfig, SamplingParams

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEARTH_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "config"


# What the settings reference (docs/settings.md, linked from the README) promises; a changed default must
# change it too.
DOCUMENTED_DEFAULTS = {
    "model.path": "", "model.backend": "auto", "model.context_length": 4096, "model.slots": 4,
    "model.batch_tokens": 512, "model.threads": 0, "model.gpu_layers": -1, "model.flash_attention": "auto",
    "model.kv_cache_type": "f16", "model.prompt_copy": "auto", "model.quantization": "none", "model.double_quant": False, "model.dtype": "auto",
    "model.device": "auto", "model.fast_decode": "auto", "model.recent": [], "model.projectors": {},
    "model.draft_models": {},
    "documents.embeddings": "off", "documents.embedding_model": "",
    "sampling.temperature": 0.7,
    "sampling.top_k": 40,
    "sampling.top_p": 0.95, "sampling.min_p": 0.05, "sampling.repeat_penalty": 1.1, "sampling.max_new_tokens": 512,
    "sampling.seed": -1, "sampling.speculative": "auto", "chat.system_prompt": "You are a helpful assistant.",
    "server.enabled": False, "server.host": "127.0.0.1", "server.port": 8642,
    "server.cors_origins": [], "remote.url": "", "remote.model": "",
    "tools.disabled_servers": [], "tools.disabled_tools": [], "tools.always_allow": [], "tools.timeout_s": 60.0,
    "tools.result_limit": 16000, "tools.max_rounds": 8,
    "tools.builtin_enabled": [], "tools.searxng_url": "", "tools.web_allow_private": False,
    "tools.web_allowed_hosts": [],
    "window.sidebar_visible": True, "window.sidebar_width": 240, "chat.presets": {},
    "window.font_size": 0.0,
    "models.keep_alive_min": 15.0, "models.budget_gib": 0.0, "server.load_by_name": "local", "server.aliases": [],
    "server.unknown_model_is_default": False,
    "voice.tts_voice": "", "voice.speed": 1.0, "voice.stt_model": "", "voice.language": "",
    "voice.send_dictation": False, "voice.hands_free": False, "voice.pause_seconds": 1.5,
    "voice.speech_threshold_db": -40.0, "voice.keep_listening": False,
}
SETTINGS_ROWS = (
    "| Backend | auto |", "| Context length | 4096 |", "| Parallel chats (slots) | 4 |", "| Batch tokens | 512 |",
    "| CPU threads | library's choice |", "| GPU layers | all |", "| Flash attention | auto |", "| KV cache type | f16 |",
    "| Prompt reading copy | auto |",
    "| Quantization | none |", "| Device | auto |", "| Fast decode | auto |",
    "| Sampling | temperature 0.7, top-k 40, top-p 0.95, min-p 0.05, repeat penalty 1.1 |",
    "| Max new tokens | 512 |", "| Seed | random |", "| Speculative decoding | auto |",
    "| Draft model | none |",
    '| System prompt | "You are a helpful assistant." |',
    "| Local API | off |", "| API address | 127.0.0.1 |", "| API port | 8642 |", "| API key | none |",
    "| Allowed web origins | none |", "| Tool call timeout | 60 s |", "| Tool result limit | 16,000 characters |",
    "| Tool steps per answer | 8 |", "| Built-in tools | all off |", "| Web search | ddgs |",
    "| fetch_page's addresses | public only |",
    "| Keep idle models | 15 min |", "| Memory budget | what fits here |", "| Load models by name | local |",
    "| Model aliases | none |", "| Unknown model names | 404 |",
    "| Voice (read aloud) | none |", "| Voice speed | 1.0 |", "| Speech to text | none |",
    "| Dictation language | detected |", "| Send when transcribed | off |", "| Hands-free | off |",
    "| Pause that ends it | 1.5 s |", "| Speech threshold | -40 dBFS |",
    "| Keep listening after each answer | off |",
)


def test_every_setting_is_declared_once_with_help_and_its_documented_default() -> None:
    keys = [s.key for s in SETTINGS]
    assert len(keys) == len(set(keys)) and all(setting.help for setting in SETTINGS)
    assert Settings(Path("unused")).as_dict() == DOCUMENTED_DEFAULTS
    reference = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert [row for row in SETTINGS_ROWS if row not in reference] == []
    assert "(docs/settings.md)" in (ROOT / "README.md").read_text(encoding="utf-8"), "the README links to it"


def test_the_defaults_reach_the_engine_as_documented() -> None:
    config, sampling, prompt = engine_inputs(Settings(Path("unused")), default_path="/d/model.gguf")
    assert config == ModelConfig(path="/d/model.gguf", backend="llamacpp", context_length=4096, slots=4,
                                 batch_tokens=512, threads=None, gpu_layers=-1, flash_attention="auto",
                                 kv_cache_type="f16", quantization="none", double_quant=False, dtype="auto",
                                 device="auto", gguf_file=None, fast_decode="auto")
    assert (sampling.temperature, sampling.top_k, sampling.top_p, sampling.min_p, sampling.repeat_penalty,
            sampling.max_new_tokens, sampling.seed, sampling.speculative) == (0.7, 40, 0.95, 0.05, 1.1, 512, None, "auto")
    assert prompt == "You are a helpful assistant."


def test_the_path_follows_the_environment_variable(config_dir: Path) -> None:
    assert settings_path() == config_dir / "settings.json"


def test_missing_file_gives_defaults_and_no_message(config_dir: Path) -> None:
    settings = Settings.load()
    assert settings.message == ""
    assert settings.get("model.slots") == 4
    assert not settings_path().exists()


def test_round_trip_through_a_restart(config_dir: Path) -> None:
    settings = Settings.load()
    settings.set("model.context_length", 2048)
    settings.set("model.kv_cache_type", "q8_0")
    settings.set("sampling.temperature", 0)  # an int where a float is declared: stored as 0.0
    settings.set("chat.system_prompt", "Answer in French.")
    settings.add_recent("/models/a.gguf")
    settings.add_recent("/models/b.gguf")
    settings.add_recent("/models/a.gguf")
    settings.save()

    data = json.loads(settings_path().read_text(encoding="utf-8"))
    assert data["schema_version"] == SCHEMA_VERSION
    again = Settings.load()
    assert again.message == ""
    assert again.as_dict() == settings.as_dict()
    assert again.get("model.context_length") == 2048
    assert again.get("sampling.temperature") == 0.0
    assert again.get("model.recent") == ["/models/a.gguf", "/models/b.gguf"]


def test_corrupt_file_gives_defaults_keeps_a_backup_and_tells_once(config_dir: Path) -> None:
    config_dir.mkdir(parents=True)
    settings_path().write_text("{ this is not json", encoding="utf-8")
    settings = Settings.load()
    assert settings.get("model.context_length") == 4096
    assert "settings.json" in settings.message and "default settings" in settings.message
    backup = config_dir / "settings.json.bak"
    assert backup.read_text(encoding="utf-8") == "{ this is not json"
    assert str(backup) in settings.message
    # the second start reads the fresh file written in place of the bad one: no message again
    assert Settings.load().message == ""


def test_unreadable_bytes_and_wrong_shapes_are_handled(config_dir: Path) -> None:
    config_dir.mkdir(parents=True)
    settings_path().write_bytes(b"\xff\xfe\x00garbage")
    assert "could not be read" in Settings.load().message
    settings_path().write_text("[1, 2, 3]", encoding="utf-8")
    assert "no settings object" in Settings.load().message


def test_bad_values_fall_back_to_their_defaults_one_by_one(config_dir: Path) -> None:
    config_dir.mkdir(parents=True)
    values = {"model.slots": "many", "model.kv_cache_type": "q2", "model.context_length": 1024, "unknown.key": 1}
    settings_path().write_text(json.dumps({"schema_version": 1, "settings": values}), encoding="utf-8")
    settings = Settings.load()
    assert settings.message == ""
    assert settings.get("model.slots") == 4
    assert settings.get("model.kv_cache_type") == "f16"
    assert settings.get("model.context_length") == 1024


def test_set_rejects_a_wrong_type_or_choice() -> None:
    settings = Settings(Path("unused"))
    with pytest.raises(ValueError, match="model.slots"):
        settings.set("model.slots", "four")
    with pytest.raises(ValueError, match="flash_attention"):
        settings.set("model.flash_attention", "maybe")
    assert settings.get("model.slots") == 4


def test_engine_inputs_from_settings(tmp_path: Path) -> None:
    settings = Settings(tmp_path / "s.json")
    settings.set("model.context_length", 1024)
    settings.set("model.slots", 2)
    settings.set("model.threads", 3)
    settings.set("sampling.seed", 7)
    settings.set("sampling.top_k", 20)
    settings.set("chat.system_prompt", "Be brief.")
    config, sampling, prompt = engine_inputs(settings, default_path="/d/model.gguf")
    assert config == ModelConfig(path="/d/model.gguf", backend="llamacpp", context_length=1024, slots=2, threads=3)
    assert sampling == SamplingParams(top_k=20, seed=7)
    assert prompt == "Be brief."

    settings.set("model.threads", 0)
    settings.set("sampling.seed", -1)
    settings.set("model.path", str(tmp_path))  # a folder: transformers
    config, sampling, _ = engine_inputs(settings)
    assert (config.backend, config.threads, sampling.seed) == ("hf", None, None)

    settings.set("model.path", "/d/other.gguf")
    settings.set("model.backend", "hf")  # transformers loading a GGUF, dequantized
    config, _, _ = engine_inputs(settings)
    assert (config.backend, config.gguf_file) == ("hf", "/d/other.gguf")


def test_paths_from_the_settings_reach_the_engine_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    settings = Settings(tmp_path / "s.json")
    settings.set("model.path", "models/small.gguf")
    config, _, _ = engine_inputs(settings)
    assert config.path == str(tmp_path / "models" / "small.gguf")
    settings.set("model.path", "~/models/../small.gguf")
    settings.set("model.backend", "hf")  # transformers reading the GGUF: its gguf_file is absolute too
    config, _, _ = engine_inputs(settings)
    assert (config.path, config.gguf_file) == (str(tmp_path / "home" / "small.gguf"),) * 2
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path / "home")
    assert engine_inputs(settings)[0].path == str(tmp_path / "home" / "small.gguf")  # the same from anywhere


def test_the_config_folder_from_the_environment_is_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HEARTH_CONFIG_DIR", "relative/config")
    assert settings_path() == tmp_path / "relative" / "config" / "settings.json"


def test_a_local_api_key_in_the_settings_file_moves_to_a_private_file(config_dir: Path) -> None:
    """Earlier versions wrote the local API's key into settings.json (default umask): the next load moves it to
    the keyring or, with none here, a file only the user can read, and writes settings.json again without it."""
    import os
    import stat
    import sys

    from app.settings import secrets
    from app.settings.store import server_options

    path = settings_path()
    path.parent.mkdir(parents=True)
    values = {"server.enabled": True, "server.host": "0.0.0.0", "server.api_key": "plain-sekrit"}
    path.write_text(json.dumps({"schema_version": SCHEMA_VERSION, "settings": values}), encoding="utf-8")
    options = server_options(Settings.load())
    assert options is not None and options.api_key == "plain-sekrit" and options.host == "0.0.0.0"
    assert "plain-sekrit" not in path.read_text(encoding="utf-8")
    assert "server.api_key" not in json.loads(path.read_text(encoding="utf-8"))["settings"]
    key_file = secrets.key_file(secrets.LOCAL_API_KEY)  # no keyring backend on this machine
    assert key_file.read_text(encoding="utf-8") == "plain-sekrit" and key_file != secrets.key_file()
    if sys.platform != "win32":
        assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    secrets.forget_cache()
    again = server_options(Settings.load())  # a restart finds it where it went
    assert again is not None and again.api_key == "plain-sekrit"
