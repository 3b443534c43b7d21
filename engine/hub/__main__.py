"""`python -m engine.hub`: search the Hub, list a repo's files with what fits here, download one.

    python -m engine.hub search QUERY [--format gguf|safetensors] [--sort downloads|likes|last_modified]
    python -m engine.hub files REPO [--revision R] [--context N] [--slots N] [--device cpu|cuda:0]
    python -m engine.hub get REPO [FILE] [--revision R]     (FILE: a file name or a quantization, e.g. Q4_K_M)
    python -m engine.hub list | delete REPO [FILE]

`get` prints the local path of the model on success; any failure prints one
sentence to stderr and exits non-zero (1; 130 when interrupted). HF_ENDPOINT,
HF_TOKEN, HF_HOME / HF_HUB_CACHE and HF_HUB_OFFLINE are honoured.
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Sequence

from engine.catalog.hf_cache import delete_downloaded, downloaded_models
from engine.units import format_bytes
from engine.hub.download import fetch_choice
from engine.hub.errors import HubError
from engine.hub.fit import FitReport, repo_view
from engine.hub.listing import ModelChoice, RepoListing, list_repo
from engine.hub.progress import DownloadProgress
from engine.hub.search import SORTS, search
from engine.hub.settings import HubSettings
from engine.protocol import ModelConfig


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    settings = HubSettings.from_env()
    try:
        return int(args.run(args, settings) or 0)
    except HubError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nInterrupted: what was downloaded is kept; run the same command again to resume.", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engine.hub", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    find = commands.add_parser("search", help="search text-generation models")
    find.add_argument("query")
    find.add_argument("--format", choices=("gguf", "safetensors"), default="gguf")
    find.add_argument("--sort", choices=SORTS, default="downloads")
    find.add_argument("--limit", type=int, default=20)
    find.set_defaults(run=_search)
    files = commands.add_parser("files", help="a repo's models, their sizes and what fits here")
    files.add_argument("repo")
    _fit_options(files)
    files.set_defaults(run=_files)
    get = commands.add_parser("get", help="download a model (the recommended one without FILE)")
    get.add_argument("repo")
    get.add_argument("file", nargs="?")
    _fit_options(get)
    get.set_defaults(run=_get)
    commands.add_parser("list", help="models in the Hugging Face cache").set_defaults(run=_list)
    delete = commands.add_parser("delete", help="delete a downloaded model")
    delete.add_argument("repo")
    delete.add_argument("file", nargs="?")
    delete.set_defaults(run=_delete)
    return parser


def _fit_options(parser: argparse.ArgumentParser) -> None:
    defaults = ModelConfig(path="")
    parser.add_argument("--revision", default=None, help="branch, tag or commit (default: main)")
    parser.add_argument("--context", type=int, default=defaults.context_length, help="tokens per chat")
    parser.add_argument("--slots", type=int, default=defaults.slots, help="chats served in parallel")
    parser.add_argument("--device", default=defaults.device, help="auto, cpu or cuda:N")


def _search(args: argparse.Namespace, settings: HubSettings) -> int:
    results = search(args.query, settings, fmt=args.format, sort=args.sort, limit=args.limit)
    for result in results:
        print(result.line())
    if not results:
        print("No text-generation models found.", file=sys.stderr)
    return 0


def _config(args: argparse.Namespace) -> ModelConfig:
    return ModelConfig(path="", context_length=args.context, slots=args.slots, device=args.device)


def _files(args: argparse.Namespace, settings: HubSettings) -> int:
    view = repo_view(args.repo, settings, _config(args), args.revision)
    listing, report = view.listing, view.report
    where = f"for {report.memory.label()}" if report else "sizes only"
    print(f"{listing.repo_id} at {listing.commit[:12]}{' (gated)' if listing.gated else ''}; {where}:")
    for choice in listing.choices:
        fit = report.fit(choice.key) if report else None
        mark = "*" if report and report.recommended == choice else " "
        verdict = f"{fit.level}: {fit.message}" if fit else ""
        size = "downloaded" if choice.key in view.local else format_bytes(choice.download_bytes)
        print(f"{mark} {choice.label:<58} {view.quantization(choice) or '?':<8} {size:>10}  {verdict}")
    if report:
        print(("Recommended (*): " if report.recommended else "") + report.why)
    else:
        print(view.problem)
    return 0


def _get(args: argparse.Namespace, settings: HubSettings) -> int:
    if args.file is None:  # the recommended one: that needs the verdicts
        view = repo_view(args.repo, settings, _config(args), args.revision)
        listing = view.listing
        if view.report is None:
            raise HubError(f"{view.problem} Name a file to download.")
        choice = _recommended(view.report)
    else:
        listing = list_repo(args.repo, settings, args.revision)
        choice = _named(listing, args.file)
    print(f"Downloading {choice.label} ({format_bytes(choice.download_bytes)}) from {listing.repo_id}",
          file=sys.stderr)
    cancel = threading.Event()
    try:
        path = fetch_choice(listing, choice, settings, _ProgressLine(), cancel.is_set)
    except KeyboardInterrupt:
        cancel.set()
        raise
    print(path)
    return 0


def _recommended(report: FitReport) -> ModelChoice:
    if report.recommended is None:
        raise HubError(f"{report.why} Name a file to download it anyway.")
    return report.recommended


def _named(listing: RepoListing, wanted: str) -> ModelChoice:
    for choice in listing.choices:
        if wanted in (choice.key, choice.key.rsplit("/", 1)[-1]) or wanted.upper() == choice.quant.upper():
            return choice
    names = ", ".join(choice.key for choice in listing.choices) or "none"
    raise HubError(f"{listing.repo_id} has no model file {wanted!r}. Its models: {names}.")


class _ProgressLine:
    """One line on stderr, rewritten in place on a terminal, every few percent otherwise."""

    def __init__(self) -> None:
        self._last_percent = -10

    def __call__(self, progress: DownloadProgress) -> None:
        percent = int(progress.fraction * 100)
        left = f", {progress.seconds_left:.0f} s left" if progress.seconds_left else ""
        line = (f"{progress.stage} {progress.file}: {format_bytes(progress.done_bytes)} of "
                f"{format_bytes(progress.total_bytes)} ({percent}%), {format_bytes(progress.bytes_per_second)}/s{left}")
        if sys.stderr.isatty():
            print(f"\r{line[:110]:<110}", end="", file=sys.stderr, flush=True)
        elif percent >= self._last_percent + 10 or progress.stage == "done":
            self._last_percent = percent
            print(line, file=sys.stderr, flush=True)


def _list(args: argparse.Namespace, settings: HubSettings) -> int:
    models = downloaded_models(settings.cache)
    for model in models:
        print(f"{format_bytes(model.size_bytes):>10}  {model.label}  {model.path}")
    if not models:
        print(f"No models in the Hugging Face cache ({settings.cache}).", file=sys.stderr)
    return 0


def _delete(args: argparse.Namespace, settings: HubSettings) -> int:
    doomed = [model for model in downloaded_models(settings.cache) if model.repo_id == args.repo and (
        args.file is None or args.file in model.files or args.file == model.files[0].rsplit("/", 1)[-1])]
    if not doomed:
        raise HubError(f"No downloaded model matches {args.repo}{' ' + args.file if args.file else ''}.")
    freed = sum(delete_downloaded(model, settings.cache) for model in doomed)
    print(f"Deleted {len(doomed)} model{'s' if len(doomed) > 1 else ''}, {format_bytes(freed)} freed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
