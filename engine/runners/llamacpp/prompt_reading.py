"""Whether and how the llama.cpp runner reads long prompts with the F32 copy (prompt_copy.py), and what the
user is told: how prompts are read (ModelInfo.prompt_reading) and, when the copy could not be used, a note
that says what it means and what to do; llama.cpp's own detail goes to the log."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import llama_cpp

from engine.catalog.prompt_copy_rule import (
    PROMPT_COPY_BYTES_PER_PARAM,
    prompt_copy_wanted,
)
from engine.protocol import ModelConfig, ModelInfo
from engine.runners.base import Progress, RunnerError
from engine.runners.llamacpp.info import kv_cache_bytes
from engine.runners.llamacpp.params import context_params
from engine.runners.llamacpp.prompt_copy import (
    COPY_TYPE,
    MIN_TOKENS,
    PromptReader,
    open_reader,
)
from engine.runners.llamacpp.seqstate import StateFormatError
from engine.units import format_bytes

log = logging.getLogger(__name__)


def prompt_reader(
    model: int, context: int, path: Path, config: ModelConfig, context_length: int, info: ModelInfo,
    weights_on_gpu: bool, progress: Progress,
) -> tuple[PromptReader | None, ModelInfo]:
    """The F32 copy's reader where it is wanted and works; the info says how prompts are read."""
    import psutil

    use, why_not = prompt_copy_wanted(config, weights_on_gpu, info.quantization, info.n_params,
                                      int(psutil.virtual_memory().total))
    if not use:
        return None, dataclasses.replace(info, prompt_reading=why_not)
    threads = int(llama_cpp.llama_n_threads_batch(context))
    progress(1.0, f"Preparing the {COPY_TYPE} copy for reading prompts")
    try:
        reader = open_reader(path, config, context, context_length, threads, PROMPT_COPY_BYTES_PER_PARAM * info.n_params,
                             lambda: context_params(config, context_length, weights_on_gpu))
    except (RunnerError, StateFormatError, OSError) as error:  # OSError: the cache folder (read-only, full)
        log.warning("the prompt-reading copy of %s is not used: %s", path.name, error)
        return None, dataclasses.replace(info, prompt_reading=PROMPT_COPY_FAILED,
                                         notes=info.notes + (_copy_failure_note(error),))
    extra = reader.memory_bytes(kv_cache_bytes(model, context_length, config.kv_cache_type))
    reading = f"{COPY_TYPE} copy of the weights ({format_bytes(extra)}), for chunks of {MIN_TOKENS} tokens or more"
    return reader, dataclasses.replace(info, prompt_reading=reading, prompt_copy_bytes=extra)


PROMPT_COPY_FAILED = "at the usual speed (the faster copy could not be used, see the note)"


def _copy_failure_note(error: Exception) -> str:
    """What the user should know and can do when the F32 copy failed; llama.cpp's detail goes to the log."""
    if isinstance(error, StateFormatError):
        return ("Long prompts are read at the usual speed: the faster way (an F32 copy of the weights) does not work "
                "with this model. Answers are not affected; there is nothing to do.")
    if isinstance(error, OSError):
        return (f"Long prompts are read at the usual speed: the faster F32 copy of the weights could not be saved in "
                f"Hearth's cache folder ({error.strerror or error}). Free some disk space there, or turn "
                "\"Prompt reading copy\" off in Settings.")
    return (f"Long prompts are read at the usual speed: the faster F32 copy of the weights could not be used. {error} "
            "Answers are not affected; turn \"Prompt reading copy\" off in Settings to stop trying.")
