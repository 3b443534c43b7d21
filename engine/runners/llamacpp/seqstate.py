"""One sequence's KV cells, moved between two llama.cpp contexts of the same model.

`llama_state_seq_get_data` / `set_data` move a sequence's cells within a context. Between two
contexts they work only when both caches are laid out alike: the same number of streams and V
stored the same way (transposed without flash attention). The prompt reader (prompt_copy.py)
keeps one stream and reads with flash attention, the generating context has one stream per chat
and, on the CPU, no flash attention. So the state is rewritten on the way:

    u32 magic, i32 seq id, u32 n_stream, then per stream: u32 cell count, and if not zero
    cells x (i32 pos, u32 n_seq_id = 1, i32 seq id), u32 v_trans, u32 n_layer,
    per layer K: i32 type, u64 row size, cells x row bytes,
    per layer V: i32 type, u64 row size, cells x row bytes             (v_trans 0)
             or: i32 type, u32 element size, u32 row elements, row elements x cells x element bytes (v_trans 1)

(llama-kv-cache.cpp, state_write / state_read, llama-cpp-python 0.3.36.) Anything else (several
streams holding the sequence, per-cell extras of M-RoPE models, a sliding-window cache written as
two caches) fails `parse`, and the caller then does not use a second context at all.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import llama_cpp
import numpy as np

_HEADER = 12  # magic, seq id, stream count
_CELL_META = 12  # pos, n_seq_id (always 1 for one sequence), seq id
_LAYER_HEADER = 12  # i32 type + u64 row size, or i32 type + u32 element size + u32 row elements


class StateFormatError(ValueError):
    """The bytes are not the layout this module knows."""


@dataclass(frozen=True)
class SeqState:
    """Where the one non-empty stream's parts lie in a sequence's state bytes."""

    streams: int
    start: int  # offset of the block's cell count; -1 when no stream holds a cell
    end: int
    cells: int
    v_trans: bool
    v_layers: tuple[tuple[int, int, int], ...]  # per layer: offset of its data, element bytes, row elements


def parse(data: np.ndarray, layers: int) -> SeqState:
    if data.size < _HEADER:
        raise StateFormatError(f"{data.size} bytes are too few for a sequence state")
    streams = int(_u32(data, 8))
    offset, found = _HEADER, None
    for _ in range(streams):
        cells = int(_u32(data, offset))
        if not cells:
            offset += 4
            continue
        if found is not None:
            raise StateFormatError("more than one stream holds the sequence")
        found = offset, cells
        offset = _skip_block(data, offset, cells, layers)
    if offset != data.size:
        raise StateFormatError(f"the state has {data.size} bytes, its layout {offset}")
    if found is None:
        return SeqState(streams, -1, -1, 0, False, ())
    start, cells = found
    v_trans, v_layers = _v_layout(data, start, cells, layers)
    return SeqState(streams, start, _skip_block(data, start, cells, layers), cells, v_trans, v_layers)


def _skip_block(data: np.ndarray, offset: int, cells: int, layers: int) -> int:
    offset += 4 + cells * _CELL_META
    v_trans, count = int(_u32(data, offset)), int(_u32(data, offset + 4))
    if v_trans > 1 or count != layers:
        raise StateFormatError(f"unexpected cell layout (v_trans {v_trans}, {count} layers for {layers})")
    offset += 8
    for _ in range(layers):  # K: row per cell
        offset += _LAYER_HEADER + cells * int(_u64(data, offset + 4))
    for _ in range(layers):
        if v_trans:
            offset += _LAYER_HEADER + cells * int(_u32(data, offset + 4)) * int(_u32(data, offset + 8))
        else:
            offset += _LAYER_HEADER + cells * int(_u64(data, offset + 4))
        if offset > data.size:
            raise StateFormatError("the state ends inside a layer")
    return offset


def _v_layout(data: np.ndarray, start: int, cells: int, layers: int) -> tuple[bool, tuple[tuple[int, int, int], ...]]:
    offset = start + 4 + cells * _CELL_META
    v_trans = bool(_u32(data, offset))
    offset += 8
    for _ in range(layers):
        offset += _LAYER_HEADER + cells * int(_u64(data, offset + 4))
    found = []
    for _ in range(layers):
        ggml_type = int(data[offset:offset + 4].view(np.int32)[0])
        if v_trans:
            element, row = int(_u32(data, offset + 4)), int(_u32(data, offset + 8))
        else:
            element = _ELEMENT_BYTES.get(ggml_type, 0)
            row = int(_u64(data, offset + 4)) // element if element else 0
        found.append((offset + _LAYER_HEADER, element, row))
        offset += _LAYER_HEADER + cells * (element * row if v_trans else int(_u64(data, offset + 4)))
    return v_trans, tuple(found)


_ELEMENT_BYTES = {llama_cpp.GGML_TYPE_F32: 4, llama_cpp.GGML_TYPE_F16: 2, 30: 2}  # 30: GGML_TYPE_BF16 (not in the bindings)


def convert(data: np.ndarray, layers: int, streams: int, stream: int, v_trans: bool) -> np.ndarray:
    """The same cells as a state for a cache of `streams` streams, in stream `stream`, V laid out as asked."""
    state = parse(data, layers)
    block = state.end - state.start if state.cells else 0
    out = np.empty(_HEADER + 4 * streams + max(block - 4, 0), dtype=np.uint8)
    out[:8] = data[:8]
    out[8:12] = np.array([streams], dtype=np.uint32).view(np.uint8)
    if not state.cells:
        out[_HEADER:] = 0
        return out
    at = _HEADER + 4 * stream
    out[_HEADER:at] = 0  # the empty streams before and after
    out[at + block:] = 0
    out[at:at + block] = data[state.start:state.end]
    if state.v_trans != v_trans:
        _relayout_v(data, out, state, at - state.start, v_trans)
    return out


def _relayout_v(data: np.ndarray, out: np.ndarray, state: SeqState, shift: int, v_trans: bool) -> None:
    cells = state.cells
    flag = state.start + 4 + cells * _CELL_META + shift
    out[flag:flag + 4] = np.array([int(v_trans)], dtype=np.uint32).view(np.uint8)
    for offset, element, row in state.v_layers:
        if element not in (2, 4):
            raise StateFormatError("a quantized V cache cannot be transposed")
        kind = np.uint16 if element == 2 else np.uint32
        size = cells * row * element
        source = data[offset:offset + size].view(kind)
        target = out[offset + shift:offset + shift + size].view(kind)
        head = offset + shift - _LAYER_HEADER
        if v_trans:  # rows per cell -> one row of cells per element
            target.reshape(row, cells)[:] = source.reshape(cells, row).T
            out[head + 4:head + 12] = np.array([element, row], dtype=np.uint32).view(np.uint8)
        else:
            target.reshape(cells, row)[:] = source.reshape(row, cells).T
            out[head + 4:head + 12] = np.array([row * element], dtype=np.uint64).view(np.uint8)


def read(context: int, seq: int) -> np.ndarray:
    size = int(llama_cpp.llama_state_seq_get_size(context, seq))
    data = np.empty(size, dtype=np.uint8)
    written = int(llama_cpp.llama_state_seq_get_data(context, _pointer(data), size, seq))
    if written <= 0:
        raise StateFormatError(f"llama.cpp wrote no state for sequence {seq}")
    return data[:written]


def write(context: int, seq: int, data: np.ndarray) -> bool:
    """Replace sequence `seq` by the cells in `data`; False (and `seq` emptied) where llama.cpp refuses them."""
    memory = llama_cpp.llama_get_memory(context)
    llama_cpp.llama_memory_seq_rm(memory, seq, -1, -1)
    if int(llama_cpp.llama_state_seq_set_data(context, _pointer(data), data.size, seq)) > 0:
        return True
    llama_cpp.llama_memory_seq_rm(memory, seq, -1, -1)
    return False


def _pointer(data: np.ndarray) -> ctypes.Array[ctypes.c_uint8]:
    return (ctypes.c_uint8 * data.size).from_address(data.ctypes.data)


def _u32(data: np.ndarray, offset: int) -> int:
    return int(data[offset:offset + 4].view(np.uint32)[0])


def _u64(data: np.ndarray, offset: int) -> int:
    return int(data[offset:offset + 8].view(np.uint64)[0])
