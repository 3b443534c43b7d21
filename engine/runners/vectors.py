"""Vectors as the API gives them: scaled to unit length (a dot product is then the cosine)."""

from __future__ import annotations

import numpy as np


def unit_length(vector: np.ndarray) -> list[float]:
    values = vector.astype(np.float64)
    norm = float(np.linalg.norm(values))
    return [float(x) for x in (values / norm if norm > 0 else values)]
