"""Whether llama.cpp reads long prompts with an F32 copy of the weights: the rule the runner follows and the
memory estimate counts by, so that the memory shown is the memory taken."""

from __future__ import annotations

import functools
import importlib.metadata

from engine.protocol import ModelConfig
from engine.tuning import (
    PROMPT_COPY_AUTO_MAX_BYTES,
    PROMPT_COPY_AUTO_SHARE,
    PROMPT_COPY_LLAMA_CPP_VERSION,
)
from engine.units import format_bytes

# llama.cpp on the CPU reads long prompts with an F32 copy of a quantized file (runners/llamacpp/prompt_copy.py)
PROMPT_COPY_BYTES_PER_PARAM = 4
UNQUANTIZED_FILE_TYPES = {"F32", "F16", "BF16"}


def prompt_copy_wanted(config: ModelConfig, weights_on_gpu: bool, file_type: str, n_params: int,
                       total_memory: int) -> tuple[bool, str]:
    """Whether llama.cpp reads long prompts with an F32 copy of the weights; why not, where not.

    The runner and the estimate both ask here, so the memory shown is the memory taken. "auto" takes
    the copy only where it was measured to pay (engine/tuning.py): a copy of at most 1 GiB (the
    bundled model's is 538 MB) and an eighth of the RAM, with the llama-cpp-python version whose
    cell format the copy was checked against."""
    if config.prompt_copy == "off":
        return False, ""
    if weights_on_gpu:
        return False, "on the GPU, which reads them fast"
    if file_type.upper() in UNQUANTIZED_FILE_TYPES:
        return False, "with the model's own weights (they are not quantized: a copy would not be faster)"
    if config.prompt_copy == "on":
        return True, ""
    copy = PROMPT_COPY_BYTES_PER_PARAM * n_params
    if copy > PROMPT_COPY_AUTO_MAX_BYTES:
        return False, (f"at the usual speed: a faster F32 copy of this model would take {format_bytes(copy)}; Hearth "
                       f"makes one by itself only up to {format_bytes(PROMPT_COPY_AUTO_MAX_BYTES)} (Settings: Prompt "
                       "reading copy: on)")
    if copy > total_memory * PROMPT_COPY_AUTO_SHARE:
        return False, ("at the usual speed: a faster F32 copy would take more than an eighth of this computer's "
                       "memory (Settings: Prompt reading copy: on)")
    installed = _llama_cpp_version()
    if installed and installed != PROMPT_COPY_LLAMA_CPP_VERSION:
        return False, (f"at the usual speed: the faster F32 copy was checked with llama-cpp-python "
                       f"{PROMPT_COPY_LLAMA_CPP_VERSION}, and {installed} is installed")
    return True, ""


@functools.lru_cache(maxsize=1)
def _llama_cpp_version() -> str:
    """The installed llama-cpp-python's version; "" where it is not installed (nothing to check)."""
    try:
        return importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return ""
