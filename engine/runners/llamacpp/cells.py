"""Copying one slot's cached cells into another's stream of llama.cpp's KV cache."""

from __future__ import annotations

import ctypes

import llama_cpp


def copy_sequence(context: int, source: int, target: int, cache_on_gpu: bool) -> None:
    """Make sequence `target` hold what `source` holds (`target` is emptied first).

    On the CPU only the cells `source` holds are copied, through llama.cpp's sequence state
    (`_copy_state`): between streams llama.cpp's own `llama_memory_seq_cp` copies every position
    of the stream, however few the chat holds. With the cache on a GPU the state would travel
    through host memory, so there `llama_memory_seq_cp` is used (a buffer copy on the device at
    the next decode); it is also the fallback where the state is refused.
    """
    memory = llama_cpp.llama_get_memory(context)
    llama_cpp.llama_memory_seq_rm(memory, target, -1, -1)
    if not cache_on_gpu:
        if _copy_state(context, source, target):
            return
        llama_cpp.llama_memory_seq_rm(memory, target, -1, -1)  # a state refused halfway may have left cells
    llama_cpp.llama_memory_seq_cp(memory, source, target, -1, -1)


def _copy_state(context: int, source: int, target: int) -> bool:
    size = int(llama_cpp.llama_state_seq_get_size(context, source))
    state = (ctypes.c_uint8 * size)()
    written = int(llama_cpp.llama_state_seq_get_data(context, state, size, source))
    return written > 0 and int(llama_cpp.llama_state_seq_set_data(context, state, written, target)) > 0
