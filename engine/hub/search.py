"""Finding models on the Hub: a search (text generation, GGUF or safetensors) or a pasted repo id / URL."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from engine.hub.client import api, call, model_info
from engine.hub.settings import HubSettings, parse_repo_reference

Format = Literal["gguf", "safetensors"]
Sort = Literal["downloads", "likes", "last_modified"]
SORTS: tuple[Sort, ...] = ("downloads", "likes", "last_modified")
# the Hub's tags: "gguf" for llama.cpp files, "safetensors" + "transformers" for the other backend
FORMAT_TAGS: dict[Format, list[str]] = {"gguf": ["gguf"], "safetensors": ["safetensors", "transformers"]}
FIELDS = ["downloads", "likes", "lastModified", "tags", "pipeline_tag", "gated", "library_name"]


@dataclass(frozen=True)
class RepoSummary:
    """One search result."""

    repo_id: str
    downloads: int
    likes: int
    last_modified: datetime | None
    formats: tuple[str, ...]  # "gguf", "safetensors"
    gated: bool
    pipeline_tag: str = ""

    def line(self) -> str:
        when = self.last_modified.strftime("%Y-%m-%d") if self.last_modified else "?"
        lock = " · gated" if self.gated else ""
        return f"{self.repo_id} · {self.downloads:,} downloads · {self.likes:,} likes · updated {when}{lock}"


def search(query: str, settings: HubSettings, fmt: Format = "gguf", sort: Sort = "downloads",
           limit: int = 30) -> list[RepoSummary]:
    """Text-generation repos matching `query`, most downloaded (or liked, or recent) first.

    A pasted repo id or Hub URL is looked up directly, so it is found even when a
    search would not rank it.
    """
    reference = parse_repo_reference(query, settings.endpoint)
    if reference is not None:
        return [summary(model_info(settings, reference.repo_id, reference.revision))]
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {SORTS}, not {sort!r}")
    found = call(settings, None, lambda: list(api(settings).list_models(
        search=query.strip() or None, filter=FORMAT_TAGS[fmt], pipeline_tag="text-generation", sort=sort,
        limit=limit, expand=FIELDS)))  # type: ignore[arg-type]
    return [summary(info) for info in found]


def summary(info: Any) -> RepoSummary:
    tags = set(info.tags or ())
    names = {s.rfilename.lower() for s in info.siblings or ()}
    formats = tuple(fmt for fmt, suffix in (("gguf", ".gguf"), ("safetensors", ".safetensors"))
                    if fmt in tags or any(name.endswith(suffix) for name in names))
    return RepoSummary(info.id, int(info.downloads or 0), int(info.likes or 0), info.last_modified, formats,
                       bool(info.gated), str(info.pipeline_tag or ""))
