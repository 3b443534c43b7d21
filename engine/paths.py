"""Paths a person gave (a CLI flag, a setting, a file dialog), made absolute once where they enter the engine."""

from __future__ import annotations

import os
from pathlib import Path


def user_path(text: str | os.PathLike[str]) -> Path:
    """`~` expanded and relative to the working directory, links kept.

    Not resolved: a Hugging Face cache file is a link to a blob named by its hash,
    and the link's name is the one a person recognises.
    """
    return Path(text).expanduser().absolute()
