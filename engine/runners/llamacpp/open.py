"""Opening a GGUF with llama.cpp for the runner: the weights, the context, the model's description,
the prompt-reading copy, the vision projector and the draft model, in that order.

Whatever a step made is freed when a later step fails or the load is cancelled, so a failed load
leaves no memory behind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import llama_cpp

from engine.protocol import ModelConfig, ModelInfo
from engine.runners.base import LoadCancelled, Progress
from engine.runners.llamacpp.draft_model import DraftModel
from engine.runners.llamacpp.info import build_info, placement
from engine.runners.llamacpp.load import (
    check_config,
    check_file,
    create_context,
    llama_log,
    load_model,
)
from engine.runners.llamacpp.pictures import LlamaPictures, load_pictures
from engine.runners.llamacpp.prompt_copy import PromptReader
from engine.runners.llamacpp.prompt_reading import prompt_reader

Opened = TypeVar("Opened")
# model, context, description, config, prompt copy, projector, draft model -> the runner
Make = Callable[[int, int, ModelInfo, ModelConfig, "PromptReader | None", "LlamaPictures | None", "DraftModel | None"],
                Opened]


def open_model(config: ModelConfig, progress: Progress, cancelled: Callable[[], bool], make: Make[Opened]) -> Opened:
    """`make` given everything opened; the model freed if anything after the weights fails."""
    path = check_file(config.path)
    check_config(config)
    mark = llama_log().mark()
    progress(0.0, "Loading weights")
    model = load_model(path, config, progress, cancelled)
    try:
        return _with_context(model, path, config, progress, cancelled, mark, make)
    except BaseException:
        llama_cpp.llama_model_free(model)
        raise


def _with_context(model: int, path: Path, config: ModelConfig, progress: Progress, cancelled: Callable[[], bool],
                  mark: int, make: Make[Opened]) -> Opened:
    if cancelled():
        raise LoadCancelled(f"Loading {path.name} was cancelled.")
    trained = int(llama_cpp.llama_model_n_ctx_train(model))
    context_length = min(config.context_length, trained) if trained > 0 else config.context_length
    weights_on_gpu = placement(config, llama_log().since(mark))[1]
    context = create_context(model, path, config, context_length, weights_on_gpu)
    reader = pictures = drafter = None
    try:
        cells = int(llama_cpp.llama_n_ctx(context))
        info = build_info(model, path, config, context_length, cells, llama_log().since(mark))
        if config.draft_model:  # before the slower parts: a draft of another vocabulary is refused at once
            drafter = DraftModel.open(config, model, context_length, weights_on_gpu, progress, cancelled)
            info = dataclasses.replace(info, draft_model=drafter.name, draft_model_bytes=drafter.memory_bytes)
        reader, info = prompt_reader(model, context, path, config, context_length, info, weights_on_gpu, progress)
        pictures = load_pictures(model, config, int(llama_cpp.llama_n_threads_batch(context)), weights_on_gpu)
        return make(model, context, info, config, reader, pictures, drafter)
    except BaseException:
        if drafter is not None:
            drafter.close()
        if pictures is not None:
            pictures.close()
        if reader is not None:
            reader.close()
        llama_cpp.llama_free(context)
        raise
