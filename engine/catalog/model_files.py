"""Which files on disk make up one model: a GGUF file, the parts of a split GGUF, a Hugging Face folder.

llama.cpp's gguf-split writes one model as NAME-00001-of-00003.gguf, ...; llama.cpp
loads the whole model when given part 1 and finds the others next to it by this
exact naming (`llama_split_path`: "%s-%05d-of-%05d.gguf"), so every part must be
present, side by side, under its own name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterable

_SPLIT = re.compile(r"^(?P<prefix>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)


@dataclass(frozen=True)
class SplitName:
    """Where one file stands in a split model."""

    prefix: str  # the name without "-00001-of-00003.gguf", folders included
    index: int  # 1-based, as in the file name
    count: int

    @property
    def is_first(self) -> bool:
        return self.index == 1

    def part_names(self) -> list[str]:
        """Every part's name, in order, in the same folder as this one."""
        return [part_name(self.prefix, index, self.count) for index in range(1, self.count + 1)]


def part_name(prefix: str, index: int, count: int) -> str:
    return f"{prefix}-{index:05d}-of-{count:05d}.gguf"


def parse_split(name: str) -> SplitName | None:
    """The split position of a file name (or repo path), None for a file that is one whole model."""
    path = PurePosixPath(name.replace("\\", "/"))
    match = _SPLIT.match(path.name)
    if match is None or int(match["count"]) < 2 or not 1 <= int(match["index"]) <= int(match["count"]):
        return None
    prefix = str(path.parent / match["prefix"]) if str(path.parent) != "." else match["prefix"]
    return SplitName(prefix, int(match["index"]), int(match["count"]))


def split_parts(first: Path) -> list[Path]:
    """All parts of the split model whose part 1 is `first`, present or not; [first] if it is not split."""
    split = parse_split(first.name)
    if split is None:
        return [first]
    return [first.with_name(name) for name in split.part_names()]


def whole_models(gguf_files: Iterable[Path]) -> list[Path]:
    """GGUF files that are a model each: part 1 of a split model stands for all its parts."""
    return [path for path in gguf_files if (split := parse_split(path.name)) is None or split.is_first]


def known_name(path: str | Path) -> str:
    """The name a user knows a model by: the GGUF file's name without .gguf (and without -00001-of-0000N for a
    split model), or the folder's, or for a Hugging Face cache snapshot the repo's ("org/name"). Never the
    file's own metadata (GGUF general.name is often a training run's label)."""
    path = Path(path)
    if path.suffix.lower() == ".gguf":
        split = parse_split(path.name)
        return PurePosixPath(split.prefix).name if split is not None else path.stem
    repo = path.parent.parent.name  # in the hub cache a snapshot folder is a commit hash under models--org--name
    if path.parent.name == "snapshots" and repo.startswith("models--"):
        return repo.removeprefix("models--").replace("--", "/")
    return path.name
