"""Paths a person typed (a command line, a settings file, an environment variable), made absolute once.

`~` is expanded and a relative path is taken from the current folder now, so a
path means the same wherever it is used later (the engine thread, a worker, a
subprocess started elsewhere). Links are kept as they are: a Hugging Face cache
file is a link to a blob named by its hash, and the name is what tells a GGUF.
"""

from __future__ import annotations

import os


def user_path(text: str) -> str:
    """`text` as an absolute path ("" stays "": no path given)."""
    return os.path.abspath(os.path.expanduser(text)) if text else ""
