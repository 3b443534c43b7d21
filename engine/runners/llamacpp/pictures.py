"""Pictures for the llama.cpp runner: a vision projector (mmproj GGUF) read with llama.cpp's libmtmd.

As in the transformers runner (hf/vision.py), each picture gets runs of ids of its own past the
vocabulary (`base` + its offset), one per image token, registered by content hash: a slot's
history says exactly which picture sits where, so prefix reuse and the shared-prefix copy work
for image chats as for text. `render` leaves a marker per picture in the prompt text; `tokenize`
turns it into what `mtmd_tokenize` makes of the mtmd marker with that picture: its text chunks as
their tokens, each image chunk (one, or several where the projector cuts the picture into slices:
MiniCPM-V, SmolVLM) as a run of ids, a `Slice`. In a step, picture_rows.py puts the rows before a
slot's last picture into its sequence first, each slice placed and attended as libmtmd's helper does
(M-RoPE positions, non-causal attention); the text after it joins the step's one token batch. The vision
encoder runs beside the steps where the projector is on the CPU (picture_encoder.py): `readable_until` says
how much of a chat's prompt can be read before a picture still being encoded.
"""

from __future__ import annotations

import bisect
import ctypes
import hashlib
import io
import logging
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar, cast

import llama_cpp
import numpy as np
from llama_cpp import mtmd_cpp as mtmd

from engine.images import MARK, MARK_PATTERN, MARK_START, projector_path
from engine.picture_counts import offer
from engine.protocol import ChatMessage, ImagePart, ModelConfig
from engine.runners.base import RunnerError
from engine.runners.llamacpp.picture_encoder import SliceEncoder

__all__ = ["MARK_START", "LlamaPictures", "Slice", "load_pictures"]
T = TypeVar("T")


@dataclass
class Slice:
    """One image chunk of a picture: `count` rows of embeddings that take `n_pos` positions."""

    first_id: int
    count: int
    n_pos: int  # mtmd_input_chunk_get_n_pos: how far the text after it moves on (max(nx, ny) with M-RoPE)
    relative: np.ndarray  # int32 [count, sections]: each row's positions for a slice placed at position 0
    moves: np.ndarray  # int32 [sections]: 1 where a section moves with the slice's position, 0 where it does not
    non_causal: bool  # its rows attend to each other both ways (Gemma 3): decoded together, never cut
    chunk: Any  # mtmd_input_chunk_p, a copy of the image chunk until it is encoded
    embeddings: np.ndarray | None = None  # [count, n_embd_inp]

    def positions(self, start: int, rows: range) -> np.ndarray:
        """The positions of `rows` for the slice placed at `start` ([rows, sections], int32, C order)."""
        return np.ascontiguousarray(self.relative[rows.start:rows.stop] + start * self.moves, dtype=np.int32)

    @property
    def whole(self) -> bool:
        """Whether its rows must go into a sequence together and leave it together."""
        return self.non_causal or self.n_pos != self.count


@dataclass
class Picture:
    expansion: list[int]  # the ids this picture becomes in a prompt (its text chunks' tokens and its slices' ids)
    slices: list[Slice]


def load_pictures(model: int, config: ModelConfig, threads: int, use_gpu: bool) -> LlamaPictures | None:
    """The projector's context where the model has one that llama.cpp reads (its log says why not, else)."""
    projector = projector_path(config)
    if projector is None or not projector.is_file():
        return None
    try:
        pictures = LlamaPictures(model, projector, threads, use_gpu, int(llama_cpp.llama_vocab_n_tokens(
            llama_cpp.llama_model_get_vocab(cast(Any, model)))))
    except RunnerError as error:
        logging.getLogger(__name__).warning("%s", error)
        return None
    pictures.withdraw = offer(str(Path(config.path).expanduser()), pictures.count)  # the chips' counts, while it is loaded
    return pictures


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
        if not mtmd.mtmd_support_vision(ctx):
            self.close()
            raise RunnerError(f"{projector.name} reads no images (an audio projector?): Hearth takes pictures only")
        self.base = base
        self.mrope = bool(mtmd.mtmd_decode_use_mrope(ctx))
        self.sections = 4 if self.mrope else 1  # positions per embedding row (llama.cpp's n_pos_per_embd)
        # Qwen3-VL's rows carry its deepstack features after the embedding: llama.cpp's input width
        self.n_embd = int(llama_cpp.llama_model_n_embd_inp(cast(Any, model)))
        self.encoder = SliceEncoder(ctx, self.n_embd, beside=not use_gpu)
        self.withdraw: Callable[[], None] = lambda: None  # its counter from engine/picture_counts.py
        self._tokenizing = threading.Lock()  # the engine thread's prompts and a worker thread's counts
        self._by_hash: dict[str, Picture] = {}
        self._slices: list[Slice] = []  # by first_id, ascending
        self._firsts: list[int] = []
        self._next_id = base

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
        return self._tokenized(rgb.width, rgb.height, rgb.tobytes(), self._register)

    def count(self, width: int, height: int) -> int:
        """The prompt tokens a picture of this size takes (its text chunks' and its slices'), as libmtmd's
        tokenization makes them, nothing encoded: what the picture's chip shows. Any thread."""
        if not 0 < width * height <= 100_000_000:
            raise RunnerError(f"a picture of {width} x {height} pixels cannot be counted")
        return self._tokenized(width, height, bytes(width * height * 3), _token_count)

    def _tokenized(self, width: int, height: int, pixels: bytes, take: Callable[[Any], T]) -> T:
        """`take(chunks)` of what mtmd_tokenize makes of libmtmd's marker with this picture."""
        bitmap = mtmd.mtmd_bitmap_init(width, height, (ctypes.c_uint8 * len(pixels)).from_buffer_copy(pixels))
        chunks = mtmd.mtmd_input_chunks_init()
        try:
            text = mtmd.mtmd_default_marker()
            prompt = mtmd.mtmd_input_text(text, len(text), False, True)
            with self._tokenizing:
                if self._ctx is None:
                    raise RunnerError("the model's vision projector was closed")
                if mtmd.mtmd_tokenize(self._ctx, chunks, ctypes.byref(prompt), (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap), 1):
                    raise RunnerError(f"llama.cpp's projector could not take the image ({width}x{height})")
                return take(chunks)
        finally:
            mtmd.mtmd_input_chunks_free(chunks)
            mtmd.mtmd_bitmap_free(bitmap)

    def _register(self, chunks: Any) -> Picture:
        expansion: list[int] = []
        slices: list[Slice] = []
        for i in range(mtmd.mtmd_input_chunks_size(chunks)):
            chunk = mtmd.mtmd_input_chunks_get(chunks, i)
            kind = mtmd.mtmd_input_chunk_get_type(chunk)
            if kind == mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT:
                n = ctypes.c_size_t()
                tokens = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(n))
                expansion += [int(tokens[k]) for k in range(n.value)]
            elif kind == mtmd.MTMD_INPUT_CHUNK_TYPE_IMAGE:
                piece = self._slice(chunk, self._next_id + sum(s.count for s in slices))
                slices.append(piece)
                expansion += range(piece.first_id, piece.first_id + piece.count)
            else:
                raise RunnerError("llama.cpp's projector made a chunk that is not text or an image of the picture")
        if not slices:
            raise RunnerError("llama.cpp's projector made no image tokens of the picture")
        for piece in slices:
            self._slices.append(piece)
            self._firsts.append(piece.first_id)
            self._next_id += piece.count
        return Picture(expansion, slices)

    def _slice(self, chunk: Any, first: int) -> Slice:
        count = int(mtmd.mtmd_input_chunk_get_n_tokens(chunk))
        if count <= 0:
            raise RunnerError("llama.cpp's projector made an empty image chunk of the picture")
        if self.mrope:  # where libmtmd's helper puts each row: at 0 and at 1, to learn which sections move
            image = mtmd.mtmd_input_chunk_get_tokens_image(chunk)
            at = [[mtmd.mtmd_image_tokens_get_decoder_pos(image, start, row) for row in range(count)]
                  for start in (0, 1)]
            # the helper's section order (mtmd-helper-common.h, set_position_mrope_2d): t, y, x, z
            zero, one = (np.array([(p.t, p.y, p.x, p.z) for p in rows], dtype=np.int64) for rows in at)
            relative, moves = zero.astype(np.int32), (one - zero)[0].astype(np.int32)
        else:
            relative, moves = np.arange(count, dtype=np.int32)[:, None], np.ones(1, dtype=np.int32)
        return Slice(first, count, int(mtmd.mtmd_input_chunk_get_n_pos(chunk)), relative, moves,
                     bool(mtmd.mtmd_decode_use_non_causal(self._ctx, chunk)), mtmd.mtmd_input_chunk_copy(chunk))

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

    # ------------------------------------------------------------ rows

    def slice_of(self, token: int) -> Slice:
        at = bisect.bisect_right(self._firsts, token) - 1
        if at >= 0:
            piece = self._slices[at]
            if token < piece.first_id + piece.count:
                return piece
        raise RunnerError(f"id {token} belongs to no picture this model has read")

    def embeddings(self, piece: Slice) -> np.ndarray:
        """The slice's rows, through the vision encoder on first use (or its encode beside the steps, waited for)."""
        return self.encoder.embeddings(piece)

    @property
    def encodes(self) -> int:
        """Image chunks run through the vision encoder so far: each once."""
        return self.encoder.encodes

    def readable_until(self, tokens: Sequence[int]) -> int:
        """How many of `tokens` (what a chat's prompt has still to read) can go into its sequence now: all,
        or up to the first row of a picture still being encoded beside the steps. Starts the encodes of
        every picture among them that has not begun."""
        if not self.encoder.beside or not self._slices:
            return len(tokens)
        ids = np.fromiter(tokens, dtype=np.int64, count=len(tokens))
        rows = np.flatnonzero(ids >= self.base)
        if not rows.size:
            return len(tokens)
        at = np.searchsorted(np.asarray(self._firsts, dtype=np.int64), ids[rows], side="right") - 1
        slices, first_rows = np.unique(at, return_index=True)
        readable = len(tokens)
        for index, row in sorted(zip(first_rows.tolist(), slices.tolist())):
            if row >= 0 and not self.encoder.ready(self._slices[row]):
                readable = min(readable, int(rows[index]))
        return readable

    def wait_encoding(self, timeout: float) -> None:
        """Until a picture's encode ends, or `timeout` seconds: a step with nothing else to do."""
        self.encoder.wait(timeout)

    def position_after(self, tokens: Sequence[int], end: int) -> int:
        """The position of the token at index `end` of a sequence whose start is `tokens[:end]`: `end`, but
        where slices take fewer positions than rows (M-RoPE), text after one moves on by its n_pos."""
        if not self.mrope:
            return end
        ids = np.fromiter(tokens[:end], dtype=np.int64, count=end)
        rows = ids[ids >= self.base]
        if not rows.size:
            return end
        at = np.searchsorted(np.asarray(self._firsts, dtype=np.int64), rows, side="right") - 1
        firsts = np.array([self._slices[i].first_id for i in at], dtype=np.int64)
        counts = np.array([self._slices[i].count for i in at], dtype=np.int64)
        done = rows == firsts + counts - 1
        position = end - rows.size + sum(self._slices[i].n_pos for i in at[done])
        if not done[-1]:  # a slice still being read: its next row's place
            piece = self._slices[at[-1]]
            position += int(piece.relative[int(rows[-1] - piece.first_id) + 1, 0])
        return int(position)

    # ------------------------------------------------------------ the end

    def close(self) -> None:
        self.withdraw()
        self.encoder.close()
        for piece in self._slices:
            if piece.chunk is not None:
                mtmd.mtmd_input_chunk_free(piece.chunk)
                piece.chunk = None
        self._slices.clear()
        self._firsts.clear()
        self._by_hash.clear()
        with self._tokenizing:
            if self._ctx:
                mtmd.mtmd_free(self._ctx)
                self._ctx = None


def _token_count(chunks: Any) -> int:
    return sum(int(mtmd.mtmd_input_chunk_get_n_tokens(mtmd.mtmd_input_chunks_get(chunks, i)))
               for i in range(mtmd.mtmd_input_chunks_size(chunks)))
