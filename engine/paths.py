"""Paths a person gave (a command line, a setting, an environment variable), made absolute once.

`~` is expanded and a relative path is taken from the current folder now, so a
path means the same wherever it is used later (the engine thread, a worker, a
subprocess started elsewhere). Links are kept as they are: a Hugging Face cache
file is a link to a blob named by its hash, and the name is what tells a GGUF.
The engine applies it where paths enter (LoadModel, the bench's --model); the
window where it reads them (--model, the settings, HEARTH_*_DIR).
"""

from __future__ import annotations

import os


def user_path(text: str | os.PathLike[str]) -> str:
    """`text` as an absolute path ("" stays "": no path given)."""
    text = os.fspath(text)
    return os.path.abspath(os.path.expanduser(text)) if text else ""
