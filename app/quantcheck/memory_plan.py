"""Whether a check fits beside the chats' model, or the chats' model has to make room.

The check holds one model at a time (the largest counts), plus its working
set: one chunk's logits and the float64 blocks the comparison works in. When
that does not fit in the free memory beside the chats' model, the chats'
model is unloaded for the check and loaded again afterwards; the dialog says
which before Run. Qt-free, so the rule is tested without a window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from engine.catalog.models import ModelReadError, describe
from engine.quantcheck.check import ModelSpec
from engine.units import format_bytes

WORKING_SET_BYTES = 384 * 1024**2  # runtime, one chunk's logits, float64 blocks (measured ~230 MiB at 49k x 512)
HEADROOM_BYTES = 512 * 1024**2  # the window, the chats' KV caches growing, the system
BYTES_PER_WEIGHT = {"none": 4.0, "int8": 1.0, "nf4": 0.5, "fp4": 0.5}  # transformers on the CPU loads fp32


@dataclass(frozen=True)
class MemoryPlan:
    pause_chats: bool
    text: str


def model_bytes(model: ModelSpec) -> int:
    """What one model of the check takes in memory, from its files (nothing is loaded)."""
    try:
        description = describe(model.path)
    except ModelReadError:
        return 0  # the check itself will say what is wrong with the file
    if description.kind == "gguf":
        return description.file_bytes
    quantized = max(description.n_params - description.unquantized_params, 0)
    return int(quantized * BYTES_PER_WEIGHT.get(model.quantization, 4.0) + description.unquantized_params * 4.0)


def plan(models: Sequence[ModelSpec], chats_model: tuple[str, int] | None, free_bytes: int) -> MemoryPlan:
    """`chats_model`: the name and bytes of the model the chats use, None when none is loaded."""
    need = max((model_bytes(m) for m in models), default=0) + WORKING_SET_BYTES
    needs = f"The check holds one model at a time: about {format_bytes(need)}, with {format_bytes(free_bytes)} free."
    if chats_model is None:
        return MemoryPlan(False, needs)
    name, _ = chats_model
    if need + HEADROOM_BYTES <= free_bytes:
        return MemoryPlan(False, f"{needs} It runs beside {name}; chats answer more slowly meanwhile.")
    return MemoryPlan(
        True,
        f"{needs} That is not enough beside {name}, so the chats' model is unloaded while the check runs and "
        "loaded again when it ends; chats wait meanwhile.",
    )


def free_memory() -> int:
    import psutil

    return int(psutil.virtual_memory().available)
