"""The picture counters of the GGUF models loaded now, by model path: what a picture's chip asks before sending.

A llama.cpp model's count is libmtmd's tokenization of a picture of that size with the model's projector
(LlamaPictures.count: no encode, milliseconds). Only the loaded projector can say it: loading a second copy
of its weights (hundreds of MB) to count beside the engine would cost more than the count is worth. So the
llama.cpp runner offers its counter here while its model is loaded, and engine/picture_tokens.py asks for it;
the counter may be called from any thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

CountPicture = Callable[[int, int], int]  # (width, height) -> prompt tokens

_lock = threading.Lock()
_counters: dict[str, list[CountPicture]] = {}  # path -> the counters offered for it, the newest last


def offer(model_path: str, counter: CountPicture) -> Callable[[], None]:
    """`counter` answers for `model_path` until the returned function withdraws it (the model's unloading)."""
    with _lock:
        _counters.setdefault(model_path, []).append(counter)

    def withdraw() -> None:
        with _lock:
            offered = _counters.get(model_path, [])
            if counter in offered:
                offered.remove(counter)
            if not offered:
                _counters.pop(model_path, None)

    return withdraw


def loaded_counter(model_path: str) -> CountPicture | None:
    """The counter of `model_path` loaded now (the newest, where two are), or None."""
    with _lock:
        offered = _counters.get(model_path)
        return offered[-1] if offered else None
