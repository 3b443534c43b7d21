"""Every setting, declared once: its key, type, default, help and allowed choices.

Separate from the settings file (store.py) because it changes for a different reason: each
feature that gains a setting adds a line here, while how the file is read, checked, kept safe
and written stays the same. The model's and sampling's defaults come from the engine's own
dataclasses, so the two can never disagree.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from engine.protocol import ModelConfig, SamplingParams
from engine.server.options import DEFAULT_PORT
from engine.tools.results import DEFAULT_RESULT_LIMIT, DEFAULT_TIMEOUT_S

MODEL_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ModelConfig)}
SAMPLING_DEFAULTS = {f.name: f.default for f in dataclasses.fields(SamplingParams)}


@dataclass(frozen=True)
class Setting:
    key: str
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] = ()

    def accepts(self, value: Any) -> bool:
        """A value of this setting's type (an int for a float; lists of strings; JSON objects) among its choices."""
        if self.type is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif self.type is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif self.type is list:
            ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
        elif self.type is dict:  # named groups of plain values (presets): JSON objects of JSON values
            ok = isinstance(value, dict) and all(isinstance(key, str) for key in value)
        else:
            ok = isinstance(value, self.type)
        return ok and (not self.choices or value in self.choices)


def _model(name: str, kind: type, help: str, choices: tuple[Any, ...] = ()) -> Setting:
    return Setting(f"model.{name}", kind, MODEL_DEFAULTS[name], help, choices)


def _sampling(name: str, kind: type, help: str, choices: tuple[Any, ...] = ()) -> Setting:
    return Setting(f"sampling.{name}", kind, SAMPLING_DEFAULTS[name], help, choices)


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
    Setting("model.draft_models", dict, {}, "The draft model (a smaller model of the same vocabulary: a GGUF for "
            "llama.cpp, a transformers folder for transformers) chosen for a model, by the model's path: its guesses "
            "are checked by the model (speculative decoding)."),
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
    # Hearth's own tools (engine/tools/builtin), shown in Tools beside the MCP servers; all off until turned on.
    Setting("tools.builtin_enabled", list, [], "Built-in tools the model is offered: web_search, fetch_page (these "
            "two reach the internet), search_chats, memory."),
    Setting("tools.searxng_url", str, "", "A SearXNG instance web_search asks (its JSON API); empty: ddgs."),
    Setting("tools.web_allow_private", bool, False, "Let fetch_page reach private, loopback and link-local "
            "addresses (your own network); off: public addresses only."),
    Setting("tools.web_allowed_hosts", list, [], "Hosts fetch_page may reach even where they are private "
            "(a NAS, a local wiki)."),
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
    # Voice (app/settings/voice_section.py shows them; app/voice/read_aloud.py reads answers aloud with them,
    # app/voice/dictation.py transcribes the microphone with the speech model)
    Setting("voice.tts_voice", str, "", "The Piper voice (.onnx, its .onnx.json beside it) answers are read with."),
    Setting("voice.speed", float, 1.0, "How fast the voice speaks: 0.25 to 4; 1 is its own pace."),
    Setting("voice.stt_model", str, "", "The faster-whisper model folder speech is recognized with (the API's "
            "/v1/audio/transcriptions)."),
    Setting("voice.language", str, "", "The language dictation is in, as an ISO 639-1 code (en, de, fr); empty: "
            "detected from the speech."),
    Setting("voice.send_dictation", bool, False, "Send a dictated message as soon as it is transcribed "
            "instead of leaving it in the input to edit."),
    Setting("voice.hands_free", bool, False, "Hands-free: a click on the microphone listens until you pause after "
            "speaking, then the message is transcribed and sent (Esc cancels)."),
    Setting("voice.pause_seconds", float, 1.5, "Hands-free: how long a pause ends the message, in seconds (0.5 to 10)."),
    Setting("voice.speech_threshold_db", float, -40.0, "Hands-free: how loud the microphone must hear you for it to "
            "be speech, in dBFS (-70 to -10; lower hears softer speech, and more of the room's noise)."),
    Setting("voice.keep_listening", bool, False, "Hands-free with Answer aloud: once an answer has been spoken, the "
            "microphone listens again for the next message (Esc, Stop or the microphone button ends it)."),
)
BY_KEY = {setting.key: setting for setting in SETTINGS}
