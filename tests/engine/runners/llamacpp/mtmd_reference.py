"""libmtmd's own single-sequence path, the reference the picture tests compare Hearth's batched path with:
`mtmd_tokenize` of the prompt with libmtmd's marker, `mtmd_helper_eval_chunks` into sequence 0 of a context of
its own (the runner's model, the runner's context settings but one slot), then greedy decoding token by token."""

from __future__ import annotations

import ctypes
import io
from dataclasses import dataclass, replace
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import mtmd_cpp as mtmd

from engine.images import MARK_PATTERN
from engine.protocol import ChatMessage, ImagePart, ModelConfig
from engine.runners.llamacpp.params import context_params
from engine.runners.llamacpp.runner import LlamaCppRunner


@dataclass
class Reference:
    prompt_tokens: list[int]  # the text chunks' tokens, with -n for a run of n image tokens
    image_tokens: list[int]  # per image chunk
    image_positions: list[int]  # per image chunk: mtmd_input_chunk_get_n_pos
    tokens: list[int]  # greedy answer
    logits: list[np.ndarray]  # the logits each answer token was chosen from


def reference_context(runner: LlamaCppRunner, config: ModelConfig) -> Any:
    """A context of the runner's model with the runner's settings but one sequence (llama_free it)."""
    assert runner._model is not None
    context = llama_cpp.llama_init_from_model(runner._model, context_params(replace(config, slots=1),
                                                                            runner.context_length, False))
    assert context
    return context


def reference_answer(runner: LlamaCppRunner, context: Any, messages: list[ChatMessage], steps: int) -> Reference:
    """What libmtmd's helper path answers to `messages` (rendered by the runner's own template), in
    sequence 0 of `context` (reference_context), emptied first."""
    assert runner.pictures is not None
    text = runner.render_chat(messages)
    pictures = [image for m in messages for image in m.images]
    marker = mtmd.mtmd_default_marker().decode()
    prompt = MARK_PATTERN.sub(marker, text).encode()
    llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(context), 0, -1, -1)
    chunks = mtmd.mtmd_input_chunks_init()
    bitmaps = [_bitmap(image) for image in pictures]
    try:
        ctx = runner.pictures._ctx
        add_bos = runner._text.adds_bos(text)
        request = mtmd.mtmd_input_text(prompt, len(prompt), add_bos, True)
        array = (mtmd.mtmd_bitmap_p_ctypes * max(len(bitmaps), 1))(*bitmaps)
        assert mtmd.mtmd_tokenize(ctx, chunks, ctypes.byref(request), array, len(bitmaps)) == 0
        layout, counts, positions = _layout(chunks)
        past = llama_cpp.llama_pos(0)
        n_batch = int(llama_cpp.llama_n_batch(context))
        assert mtmd.mtmd_helper_eval_chunks(ctx, context, chunks, 0, 0, n_batch, True, ctypes.byref(past)) == 0
        tokens, logits = _greedy(context, int(past.value), steps, runner._n_vocab)
        return Reference(layout, counts, positions, tokens, logits)
    finally:
        mtmd.mtmd_input_chunks_free(chunks)
        for bitmap in bitmaps:
            mtmd.mtmd_bitmap_free(bitmap)


def _bitmap(image: ImagePart) -> Any:
    from PIL import Image

    rgb = Image.open(io.BytesIO(image.data)).convert("RGB")
    pixels = rgb.tobytes()
    return mtmd.mtmd_bitmap_init(rgb.width, rgb.height, (ctypes.c_uint8 * len(pixels)).from_buffer_copy(pixels))


def _layout(chunks: Any) -> tuple[list[int], list[int], list[int]]:
    layout: list[int] = []
    counts, positions = [], []
    for i in range(mtmd.mtmd_input_chunks_size(chunks)):
        chunk = mtmd.mtmd_input_chunks_get(chunks, i)
        if mtmd.mtmd_input_chunk_get_type(chunk) == mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT:
            n = ctypes.c_size_t()
            tokens = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(n))
            layout += [int(tokens[k]) for k in range(n.value)]
        else:
            count = int(mtmd.mtmd_input_chunk_get_n_tokens(chunk))
            layout.append(-count)
            counts.append(count)
            positions.append(int(mtmd.mtmd_input_chunk_get_n_pos(chunk)))
    return layout, counts, positions


def _greedy(context: Any, past: int, steps: int, n_vocab: int) -> tuple[list[int], list[np.ndarray]]:
    batch = llama_cpp.llama_batch_init(1, 0, 1)
    tokens: list[int] = []
    logits: list[np.ndarray] = []
    try:
        row = llama_cpp.llama_get_logits_ith(context, -1)
        for step in range(steps):
            values = np.ctypeslib.as_array(row, shape=(n_vocab,)).copy()
            logits.append(values)
            tokens.append(int(values.argmax()))
            if step == steps - 1:
                break
            batch.n_tokens = 1
            batch.token[0], batch.pos[0], batch.n_seq_id[0], batch.logits[0] = tokens[-1], past + step, 1, 1
            batch.seq_id[0][0] = 0
            assert llama_cpp.llama_decode(context, batch) == 0
            row = llama_cpp.llama_get_logits_ith(context, 0)
    finally:
        llama_cpp.llama_batch_free(batch)
    return tokens, logits


def hearth_layout(runner: LlamaCppRunner, ids: list[int]) -> list[int]:
    """Hearth's prompt ids in the reference's layout: text tokens as they are, a run of picture ids as -n (a new
    run starts where a slice starts)."""
    assert runner.pictures is not None
    out: list[int] = []
    for token in ids:
        if token < runner.pictures.base:
            out.append(token)
        elif out and out[-1] < 0 and runner.pictures.slice_of(token).first_id != token:
            out[-1] -= 1
        else:
            out.append(-1)
    return out
