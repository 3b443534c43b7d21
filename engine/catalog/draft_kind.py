"""Which draft model a backend can take: llama.cpp drafts with a GGUF, the transformers runner with a
transformers folder (runners/hf/draft_model.py), a GGUF loaded through transformers included.

One model path keeps one draft model in the settings (model.draft_models), and a GGUF may be loaded by either
backend; a draft of the other kind is left out of its ModelConfig rather than failing the load.
"""

from __future__ import annotations

from pathlib import Path


def is_gguf_name(path: str) -> bool:
    return Path(path).suffix.lower() == ".gguf"


def draft_for(backend: str, draft: str | None) -> str | None:
    """`draft` where `backend` can load it (a GGUF for "llamacpp", anything else, a folder, for "hf"), else None.
    By name only: this runs for every estimate, and a path that is not there is the load's to report."""
    if not draft or backend not in ("llamacpp", "hf"):
        return None
    return draft if is_gguf_name(draft) == (backend == "llamacpp") else None
