"""The reference's per-position distributions, on disk while the candidates are scored.

Every scored position keeps the whole vocabulary's log-probabilities as float16
(2 bytes a token: 49k vocabulary x 2,000 positions = 200 MB; the error this
adds to a KLD is bounded in metrics.py) in a file in a
private temporary folder, so the reference can be unloaded before a candidate
is loaded and a large vocabulary never has to fit in memory. Only the top
token, the next token's NLL and the rounding term (float64, exact) stay in memory. The folder
goes when the store closes, also after a cancel or an error.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import BinaryIO

import numpy as np

from engine.quantcheck.metrics import ReferenceRows


class ReferenceStore:
    def __init__(self, vocabulary_size: int, folder: Path | None = None) -> None:
        self.vocabulary_size = vocabulary_size
        self.folder = Path(tempfile.mkdtemp(prefix="hearth-quantcheck-", dir=folder))
        self._path = self.folder / "reference-logprobs.f16"
        self._writer: BinaryIO | None = self._path.open("wb")
        self._chunks: list[tuple[int, int]] = []  # (first row, rows) of each chunk
        self._top: list[np.ndarray] = []
        self._nll: list[np.ndarray] = []
        self._rounding: list[np.ndarray] = []
        self._rows = 0

    @property
    def chunks(self) -> int:
        return len(self._chunks)

    def append(self, rows: ReferenceRows) -> None:
        if rows.logprobs.shape[1] != self.vocabulary_size:
            raise ValueError(f"rows of {rows.logprobs.shape[1]} tokens, store of {self.vocabulary_size}")
        assert self._writer is not None, "the store is closed for writing"
        self._writer.write(np.ascontiguousarray(rows.logprobs, dtype=np.float16).tobytes())
        self._chunks.append((self._rows, len(rows.logprobs)))
        self._top.append(rows.top)
        self._nll.append(rows.nll)
        self._rounding.append(rows.rounding)
        self._rows += len(rows.logprobs)

    def finish(self) -> None:
        """No more rows: from now on chunks can be read back."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def chunk(self, index: int) -> ReferenceRows:
        """One chunk's rows, read into memory (a mapping would keep every page read in this process's memory)."""
        self.finish()
        first, rows = self._chunks[index]
        logprobs = np.fromfile(
            self._path, dtype=np.float16, count=rows * self.vocabulary_size, offset=first * self.vocabulary_size * 2
        ).reshape(rows, self.vocabulary_size)
        return ReferenceRows(logprobs, self._top[index], self._nll[index], self._rounding[index])

    def perplexity(self) -> float:
        """The reference's own PPL over every stored position."""
        nll = np.concatenate(self._nll) if self._nll else np.zeros(0)
        return float(np.exp(nll.mean())) if nll.size else float("nan")

    def close(self) -> None:
        self.finish()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> ReferenceStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
