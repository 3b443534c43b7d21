"""A draft model to suggest for a repo on the Hub: a much smaller model of the same family with the same
vocabulary (Qwen2.5-0.5B for Qwen2.5-7B, Llama-3.2-1B for Llama-3.1-8B), with the memory the pair needs.

The name finds the candidates: the parameter count it states ("7B", "135M") and the family before it
(minor versions folded: Llama-3.1 and Llama-3.2 are one family, "llama-3"). The Hub is searched for
the family's repos of the same kind (GGUF for a GGUF repo, transformers folders for a folder); those at
most DRAFT_SHARE of the model's size are ranked (the same publisher, then the same variant words such as
"instruct" or "coder", then the same version, then the smallest) and the first few are checked, vocabulary
against vocabulary (a GGUF's header, a folder's tokenizer.json), as the runner will check them at load
(engine/hub/vocabulary.py). The name only proposes; the vocabulary decides.
"""

from __future__ import annotations

import dataclasses
import re
import struct
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from engine.catalog.description import ModelDescription
from engine.catalog.devices import DeviceMemory, system_memory
from engine.catalog.memory import estimate, verdict
from engine.catalog.models import describe
from engine.hub.errors import HubError
from engine.hub.fit import Fit, RepoView, config_for, downloaded_choices, target_memory
from engine.hub.listing import ModelChoice, RepoListing, list_repo
from engine.hub.remote import (
    FIRST_READ, MAX_HEADER, describe_choices, describe_folder_remote, describe_gguf_remote, read_range,
)
from engine.hub.search import Format, search
from engine.hub.settings import HubSettings
from engine.hub.vocabulary import Vocabulary, folder_vocabulary, read_vocabulary, vocabulary_problem
from engine.protocol import ModelConfig
from engine.units import format_bytes

DRAFT_SHARE = 0.25  # a draft model this much of the model's parameters at most: its passes must cost little
CHECKED = 3  # candidates whose vocabulary is read, best ranked first
DRAFT_QUANT = "Q8_0"  # a draft's own precision matters more than its size (LM Studio's and llama.cpp's examples)
_SIZE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)([bm])(?![a-z0-9])")
_SCALE = {"b": 1e9, "m": 1e6}


@dataclass(frozen=True)
class NameParts:
    parameters: float  # the count the name states
    size_text: str  # as it says it: "7B"
    family: str  # "qwen2", "llama-3", "qwen2-coder"
    version: str  # the family with its minor version: "qwen2.5"
    words: frozenset[str]  # after the size: {"instruct"}
    query: str  # what to search the Hub for: "qwen2", "llama-3"


def name_parts(repo_id: str) -> NameParts | None:
    """What a repo's name says of its model; None where it states no parameter count (or several, like 8x7B)."""
    name = repo_id.rsplit("/", 1)[-1].lower()
    match = _SIZE.search(name)
    if match is None:
        return None
    version = re.sub(r"[-_. ]+$", "", name[:match.start()].removeprefix("meta-"))
    version = re.sub(r"[-_ ]+", "-", version)
    if not version:
        return None
    family = re.sub(r"(\d+)\.\d+", r"\1", version)
    words = frozenset(re.split(r"[-_. ]+", name[match.end():])) - {"", "gguf"}
    query = re.match(r"[a-z]+-?\d*", family)
    return NameParts(float(match.group(1)) * _SCALE[match.group(2)], match.group(0).upper(), family, version, words,
                     query.group(0) if query else family)


def rank_candidates(repo_id: str, found: list[str]) -> list[str]:
    """The repos of `found` that could draft for `repo_id` by their names, the likeliest first."""
    target = name_parts(repo_id)
    if target is None:
        return []
    author = repo_id.split("/")[0].lower()
    ranked = []
    for other in dict.fromkeys(found):
        parts = name_parts(other)
        if other == repo_id or parts is None or parts.family != target.family \
                or parts.parameters > target.parameters * DRAFT_SHARE:
            continue
        ranked.append(((other.split("/")[0].lower() != author, len(parts.words ^ target.words),
                        parts.version != target.version, parts.parameters), other))
    return [other for _, other in sorted(ranked)]


def pick_file(listing: RepoListing, model_bytes: int) -> ModelChoice | None:
    """The draft repo's file to take: its Q8_0, else the most precise at most DRAFT_SHARE of the model's file,
    else its smallest."""
    ggufs = [choice for choice in listing.choices if choice.kind == "gguf"]
    return (next((c for c in ggufs if c.quant.upper() == DRAFT_QUANT), None)
            or next((c for c in ggufs if c.model_bytes <= model_bytes * DRAFT_SHARE), None)
            or min(ggufs, key=lambda c: c.model_bytes, default=None))


@dataclass(frozen=True)
class DraftSuggestion:
    """The draft model Get models offers with a repo (or why none), and the model's fit with it beside it."""

    why: str  # one line: what it is and why it fits the model, or why there is none
    listing: RepoListing | None = None
    choice: ModelChoice | None = None
    fits: dict[str, Fit] = dataclasses.field(default_factory=dict)  # the model's choice key -> with the draft
    local_path: str = ""  # where it is downloaded already

    @property
    def found(self) -> bool:
        return self.choice is not None


def suggest_draft(view: RepoView, config: ModelConfig, settings: HubSettings, memory: DeviceMemory | None = None,
                  has_gpu: bool | None = None) -> DraftSuggestion:
    """Search the Hub for a draft model for `view`'s GGUF models, or for its transformers folder; HubError where the
    Hub cannot be asked."""
    listing = view.listing
    kind = _kind(listing)
    target = name_parts(listing.repo_id)
    if kind is None:
        return DraftSuggestion("Draft models are for GGUF models (llama.cpp) and transformers folders.")
    if target is None:
        return DraftSuggestion(f"No draft model suggested: the name {listing.repo_id} does not say how many "
                               "parameters its model has (like 7B), which finding a smaller one of its family needs.")
    what = "GGUF" if kind == "gguf" else "transformers"
    fmt: Format = "gguf" if kind == "gguf" else "safetensors"
    found = [summary.repo_id for summary in search(target.query, settings, fmt=fmt, limit=100)]
    ranked = rank_candidates(listing.repo_id, found)
    if not ranked:
        return DraftSuggestion(f"No draft model suggested: the Hub has no {what} model of the {target.family} family "
                               f"with at most {DRAFT_SHARE:.0%} of {target.size_text} parameters.")
    smallest = min((choice for choice in listing.choices if choice.kind == kind), key=lambda c: c.model_bytes)
    ours = _vocabulary(listing, smallest, settings, view.local)
    problems = []
    for repo_id in ranked[:CHECKED]:
        draft_listing = list_repo(repo_id, settings)
        folders = (c for c in draft_listing.choices if c.kind == "hf")
        choice = (pick_file(draft_listing, smallest.model_bytes) if kind == "gguf"
                  else min(folders, key=lambda c: c.model_bytes, default=None))
        if choice is None:
            continue
        local = downloaded_choices(draft_listing, settings)
        problem = vocabulary_problem(ours, _vocabulary(draft_listing, choice, settings, local), listing.repo_id,
                                     repo_id)
        if problem:
            problems.append(problem)
            continue
        return _suggestion(view, draft_listing, choice, local.get(choice.key, ""), ours, config, settings, memory,
                           has_gpu)
    none = f"none of its candidates has a {what} model."
    return DraftSuggestion("No draft model suggested: " + " ".join(problems or [none]))


def _kind(listing: RepoListing) -> str | None:
    """What a repo's draft would be: "gguf" where it has GGUF files, else "hf" where it is a folder, else None."""
    return next((kind for kind in ("gguf", "hf") if any(choice.kind == kind for choice in listing.choices)), None)


def _suggestion(view: RepoView, listing: RepoListing, choice: ModelChoice, local_path: str, vocabulary: Vocabulary,
                config: ModelConfig, settings: HubSettings, memory: DeviceMemory | None,
                has_gpu: bool | None) -> DraftSuggestion:
    target, parts = name_parts(view.listing.repo_id), name_parts(listing.repo_id)
    assert target is not None and parts is not None  # ranked by them
    remote = describe_gguf_remote if choice.kind == "gguf" else describe_folder_remote
    draft = describe(local_path) if local_path else remote(listing, choice, settings)
    fits = pair_fits(view, draft, f"{listing.repo_id}/{choice.key}", config, settings, memory, has_gpu)
    why = (f"{listing.repo_id} · {choice.label} ({format_bytes(choice.download_bytes)}): the same vocabulary "
           f"({len(vocabulary.tokens):,} tokens), {parts.size_text} parameters against {target.size_text}.")
    return DraftSuggestion(why, listing, choice, fits, local_path)


def pair_fits(view: RepoView, draft: ModelDescription, draft_name: str, config: ModelConfig, settings: HubSettings,
              memory: DeviceMemory | None = None, has_gpu: bool | None = None) -> dict[str, Fit]:
    """Each choice's verdict with the draft model loaded beside it (the GGUF ones where the repo has any), as the
    estimate counts one."""
    if memory is None or has_gpu is None:
        memory, has_gpu = target_memory(config)
    ram_bytes = memory.total_bytes if memory.device == "cpu" else system_memory().total_bytes
    kind = _kind(view.listing)
    mine = dataclasses.replace(view.listing, choices=tuple(c for c in view.listing.choices if c.kind == kind))
    fits = {}
    for key, model in describe_choices(mine, settings, view.local).items():
        choice = mine.choice(key)
        paired = dataclasses.replace(config_for(choice, config, model.path), draft_model=draft_name)
        result = estimate(model, paired, has_gpu=has_gpu, total_memory=ram_bytes, draft=draft,
                          projector_bytes=choice.projector.size if choice.projector else None)
        answer = verdict(result, memory.free_bytes, memory.total_bytes)
        fits[key] = Fit(choice, answer.level, result.device_bytes, answer.message, answer.suggestion,
                        result.device_after_load_bytes)
    return fits


def _vocabulary(listing: RepoListing, choice: ModelChoice, settings: HubSettings,
                local: dict[str, str]) -> Vocabulary:
    """A choice's vocabulary: a GGUF's from the start of its first file, a folder's from its tokenizer files; on disk
    where downloaded, else by Range requests."""
    if choice.kind == "hf":
        return _folder_vocabulary(listing, choice, settings, local.get(choice.key, ""))
    first = next(file for file in choice.model_files if file.path.lower().endswith(".gguf"))
    path = local.get(choice.key)

    def start(size: int) -> bytes:
        if path:
            with open(path, "rb") as stream:
                return stream.read(size)
        return read_range(settings, listing.repo_id, listing.commit, first, 0, size)

    size = min(FIRST_READ, first.size)
    while True:
        try:
            return read_vocabulary(start(size))
        except struct.error as error:
            if size >= min(MAX_HEADER, first.size):
                raise HubError(f"{PurePosixPath(first.path).name} in {listing.repo_id}: its vocabulary could not be "
                               f"read ({error}).") from error
            size = min(size * 4, MAX_HEADER, first.size)  # the metadata is longer than what was read
        except ValueError as error:
            raise HubError(f"{PurePosixPath(first.path).name} in {listing.repo_id}: {error}.") from error


def _folder_vocabulary(listing: RepoListing, choice: ModelChoice, settings: HubSettings, folder: str) -> Vocabulary:
    by_name = {PurePosixPath(file.path).name: file for file in choice.files}
    if "tokenizer.json" not in by_name:
        raise HubError(f"{listing.repo_id} has no tokenizer.json, so its vocabulary cannot be compared.")

    def read(name: str) -> bytes:
        if name not in by_name:
            return b""
        if folder:
            return (Path(folder) / by_name[name].path).read_bytes()
        return read_range(settings, listing.repo_id, listing.commit, by_name[name], 0, by_name[name].size)

    try:
        return folder_vocabulary(read("tokenizer.json"), read("tokenizer_config.json"))
    except ValueError as error:
        raise HubError(f"tokenizer.json in {listing.repo_id}: {error}.") from error
