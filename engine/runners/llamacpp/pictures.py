"""Pictures for the llama.cpp runner: a vision projector (mmproj GGUF) read with llama.cpp's libmtmd.

As in the transformers runner (hf/vision.py), each picture gets a run of ids of its own past the
vocabulary (`base` + its offset), one per image token, registered by content hash: a slot's
history says exactly which picture sits where, so prefix reuse and the shared-prefix copy work
for image chats as for text. `render` leaves a marker per picture in the prompt text; `tokenize`
turns it into what `mtmd_tokenize` makes of the mtmd marker with that picture (text chunks as
their tokens, the image chunk as the picture's ids). In a step, `decode_pictures` puts the rows
before a slot's last picture into its sequence first (text as tokens, image rows as embeddings
from `mtmd_encode_chunk`, encoded once per picture); the text after it joins the step's one
token batch with every other slot's.
"""

from __future__ import annotations

import ctypes
import dataclasses
import hashlib
import io
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence, cast

import llama_cpp
import numpy as np
from llama_cpp import mtmd_cpp as mtmd

from engine.images import MARK, MARK_PATTERN, MARK_START, projector_path
from engine.protocol import ChatMessage, ImagePart, ModelConfig
from engine.runners.base import RunnerError, SlotWork

__all__ = ["MARK_START", "LlamaPictures", "load_pictures"]


@dataclass
class Picture:
    expansion: list[int]  # the ids this picture becomes in a prompt (its text chunks' tokens and its ids)
    first_id: int
    count: int  # image tokens: embedding rows
    chunk: Any  # mtmd_input_chunk_p, a copy of the image chunk until it is encoded
    embeddings: np.ndarray | None = None  # [count, n_embd]


def load_pictures(model: int, config: ModelConfig, threads: int, use_gpu: bool) -> LlamaPictures | None:
    """The projector's context where the model has one that llama.cpp reads (its log says why not, else)."""
    projector = projector_path(config)
    if projector is None or not projector.is_file():
        return None
    try:
        return LlamaPictures(model, projector, threads, use_gpu, int(llama_cpp.llama_vocab_n_tokens(
            llama_cpp.llama_model_get_vocab(cast(Any, model)))))
    except RunnerError as error:
        import logging

        logging.getLogger(__name__).warning("%s", error)
        return None


class LlamaPictures:
    """One mtmd context beside the runner's model, and the pictures it has read, by content."""

    def __init__(self, model: int, projector: Path, threads: int, use_gpu: bool, base: int) -> None:
        params = mtmd.mtmd_context_params_default()
        params.use_gpu = use_gpu
        params.n_threads = threads
        params.print_timings = False
        ctx = mtmd.mtmd_init_from_file(str(projector).encode("utf-8"), cast(Any, model), params)
        if not ctx:
            raise RunnerError(f"llama.cpp could not read the vision projector {projector.name}")
        self._ctx: Any = ctx
        if not mtmd.mtmd_support_vision(ctx) or mtmd.mtmd_decode_use_mrope(ctx) \
                or mtmd.mtmd_decode_use_non_causal(ctx, None):
            self.close()
            raise RunnerError(f"{projector.name} is not a vision projector Hearth can use yet (it needs "
                              "M-RoPE or non-causal decoding, or reads no images)")
        self.base = base
        self.n_embd = int(llama_cpp.llama_model_n_embd(cast(Any, model)))
        self.encodes = 0  # pictures run through the vision encoder: each once
        self._by_hash: dict[str, Picture] = {}
        self._by_id: list[Picture] = []
        self._next_id = base
        self._batch: llama_cpp.llama_batch | None = None  # rows of embeddings, made on the first picture
        self._batch_rows = 0

    # ------------------------------------------------------------ prompt text and ids

    def render(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        return [replace(m, content="".join(self._mark(image) for image in m.images) + m.content, images=())
                if m.images else m for m in messages]

    def _mark(self, image: ImagePart) -> str:
        key = hashlib.sha256(image.data).hexdigest()
        if key not in self._by_hash:
            self._by_hash[key] = self._read(image)
        return MARK.format(key)

    def _read(self, image: ImagePart) -> Picture:
        from PIL import Image, UnidentifiedImageError

        try:
            rgb = Image.open(io.BytesIO(image.data)).convert("RGB")
        except (UnidentifiedImageError, OSError, ValueError) as error:
            raise RunnerError(f"the image ({image.mime}, {len(image.data):,} bytes) could not be read: {error}") from error
        pixels = rgb.tobytes()
        bitmap = mtmd.mtmd_bitmap_init(rgb.width, rgb.height, (ctypes.c_uint8 * len(pixels)).from_buffer_copy(pixels))
        chunks = mtmd.mtmd_input_chunks_init()
        try:
            text = mtmd.mtmd_default_marker()
            prompt = mtmd.mtmd_input_text(text, len(text), False, True)
            if mtmd.mtmd_tokenize(self._ctx, chunks, ctypes.byref(prompt), (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap), 1):
                raise RunnerError(f"llama.cpp's projector could not take the image ({rgb.width}x{rgb.height})")
            return self._register(chunks)
        finally:
            mtmd.mtmd_input_chunks_free(chunks)
            mtmd.mtmd_bitmap_free(bitmap)

    def _register(self, chunks: Any) -> Picture:
        expansion: list[int] = []
        first, count, image = self._next_id, 0, None
        for i in range(mtmd.mtmd_input_chunks_size(chunks)):
            chunk = mtmd.mtmd_input_chunks_get(chunks, i)
            kind = mtmd.mtmd_input_chunk_get_type(chunk)
            if kind == mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT:
                n = ctypes.c_size_t()
                tokens = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(n))
                expansion += [int(tokens[k]) for k in range(n.value)]
            elif kind == mtmd.MTMD_INPUT_CHUNK_TYPE_IMAGE and image is not None:
                mtmd.mtmd_input_chunk_free(image)
                raise RunnerError("this projector cuts a picture into slices, which Hearth does not read yet")
            elif kind == mtmd.MTMD_INPUT_CHUNK_TYPE_IMAGE:
                count = int(mtmd.mtmd_input_chunk_get_n_tokens(chunk))
                image = mtmd.mtmd_input_chunk_copy(chunk)
                expansion += range(first, first + count)
        if image is None or count <= 0:
            raise RunnerError("llama.cpp's projector made no image tokens of the picture")
        self._next_id += count
        picture = Picture(expansion, first, count, image)
        self._by_id.append(picture)
        return picture

    def tokenize(self, text: str, encode: Callable[[str, bool], list[int]]) -> list[int]:
        """Ids of a prompt with markers: `encode(piece, first)` for the text between them."""
        ids: list[int] = []
        last = 0
        for match in MARK_PATTERN.finditer(text):
            ids += encode(text[last:match.start()], last == 0)
            picture = self._by_hash.get(match.group(1))
            if picture is None:
                raise RunnerError("a picture in this conversation was not read first (render_chat)")
            ids += picture.expansion
            last = match.end()
        return ids + encode(text[last:], last == 0)

    # ------------------------------------------------------------ the step

    def decode_pictures(self, item: SlotWork, decode_tokens: Callable[[list[int], int, int], None],
                        decode: Callable[[llama_cpp.llama_batch], None]) -> SlotWork:
        """Everything of `item` up to its last picture row into the slot's sequence, in order (text runs
        by `decode_tokens(tokens, start, slot)`, picture rows as embeddings); returns the rest."""
        tokens = item.tokens
        last = max((i for i, t in enumerate(tokens) if t >= self.base), default=-1)
        if last < 0:
            return item
        if item.sample and last == len(tokens) - 1:
            raise RunnerError("a prompt may not end in a picture")
        i = 0
        while i <= last:
            picture_row = tokens[i] >= self.base
            j = i
            while j <= last and (tokens[j] >= self.base) == picture_row:
                j += 1
            if picture_row:
                decode(self._embedding_batch(tokens[i:j], item.start_pos + i, item.slot))
            else:
                decode_tokens(list(tokens[i:j]), item.start_pos + i, item.slot)
            i = j
        return dataclasses.replace(item, tokens=tokens[last + 1:], start_pos=item.start_pos + last + 1)

    def _embedding_batch(self, ids: Sequence[int], start: int, slot: int) -> llama_cpp.llama_batch:
        if self._batch is None or self._batch_rows < len(ids):
            if self._batch is not None:
                llama_cpp.llama_batch_free(self._batch)
            self._batch_rows = max(len(ids), 64)
            self._batch = llama_cpp.llama_batch_init(self._batch_rows, self.n_embd, 1)
        batch = self._batch
        rows = np.stack([self._row(i) for i in ids]).astype(np.float32)
        ctypes.memmove(batch.embd, rows.ctypes.data, rows.nbytes)
        pos_of, count_of, seq_of, wants = (cast(Any, batch.pos), cast(Any, batch.n_seq_id), cast(Any, batch.seq_id),
                                           cast(Any, batch.logits))
        for row in range(len(ids)):  # no token array in a batch of embeddings
            pos_of[row], count_of[row], wants[row] = start + row, 1, 0
            seq_of[row][0] = slot
        batch.n_tokens = len(ids)
        return batch

    def _row(self, token: int) -> np.ndarray:
        for picture in reversed(self._by_id):
            if picture.first_id <= token < picture.first_id + picture.count:
                if picture.embeddings is None:
                    picture.embeddings = self._encode(picture)
                return cast(np.ndarray, picture.embeddings[token - picture.first_id])
        raise RunnerError(f"id {token} belongs to no picture this model has read")

    def _encode(self, picture: Picture) -> np.ndarray:
        if mtmd.mtmd_encode_chunk(self._ctx, picture.chunk) != 0:
            raise RunnerError("llama.cpp's vision encoder failed on the picture")
        self.encodes += 1
        out = mtmd.mtmd_get_output_embd(self._ctx)
        embeddings = np.ctypeslib.as_array(cast(Any, out), shape=(picture.count * self.n_embd,))
        mtmd.mtmd_input_chunk_free(picture.chunk)
        picture.chunk = None
        return embeddings.reshape(picture.count, self.n_embd).copy()

    # ------------------------------------------------------------ the end

    def close(self) -> None:
        for picture in self._by_id:
            if picture.chunk is not None:
                mtmd.mtmd_input_chunk_free(picture.chunk)
                picture.chunk = None
        self._by_id.clear()
        self._by_hash.clear()
        if self._batch is not None:
            llama_cpp.llama_batch_free(self._batch)
            self._batch = None
        if self._ctx:
            mtmd.mtmd_free(self._ctx)
            self._ctx = None
