"""transformers reads a GGUF the slow way: this makes one load read it once.

Loading a GGUF through transformers parses the file's header three times (for the config,
the tokenizer and the weights: gguf-py walks every field of a 49,152-token vocabulary in
Python, about 7 s each for the bundled model on a 2-core VM) and builds gguf-py's tensor name
map once per tensor (397 times, 11 s: it is the same map every time). Inside `read_once()`
`gguf.GGUFReader` hands back the reader already made for the same unchanged file and
`gguf.get_tensor_name_map` its map made for the same architecture and depth; transformers
looks both up in the `gguf` module when it needs them, so nothing of its own is patched.

Loads through this are one at a time (a lock): the two names are the module's, so two loads
at once would share one patch. Outside it both are gguf-py's own again, and the readers (which
keep the file mapped) are let go.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_lock = threading.Lock()


@contextmanager
def read_once() -> Iterator[None]:
    try:
        import gguf
    except ImportError:  # transformers will say that gguf is needed
        yield
        return
    with _lock:
        real_reader, real_map = gguf.GGUFReader, gguf.get_tensor_name_map
        readers: dict[tuple[str, int, int], Any] = {}
        maps: dict[tuple[Any, int], Any] = {}

        def reader(path: Any, mode: str = "r") -> Any:
            if mode != "r":
                return real_reader(path, mode)  # type: ignore[arg-type]
            stat = Path(path).stat()
            key = (str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)
            if key not in readers:
                readers[key] = real_reader(path, mode)  # type: ignore[arg-type]
            return readers[key]

        def name_map(arch: Any, n_blocks: int) -> Any:
            if (arch, n_blocks) not in maps:
                maps[arch, n_blocks] = real_map(arch, n_blocks)
            return maps[arch, n_blocks]

        gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map  # type: ignore[misc,assignment]
        try:
            yield
        finally:
            gguf.GGUFReader, gguf.get_tensor_name_map = real_reader, real_map  # type: ignore[misc]
            readers.clear()
