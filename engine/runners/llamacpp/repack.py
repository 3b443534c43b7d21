"""ggml's repacked weight layout without its AMX one, for CPUs where AMX cannot be used.

Where the CPU advertises AMX but faults on it, the loader turns llama.cpp's extra
weight layouts off (load.extra_buffers_usable), and with them the repacked 8x8
blocks that make prompt processing of Q4_0, Q4_K and IQ4_NL weights fast on any
AVX2 CPU. Naming those matrices one by one for the "CPU_REPACK" buffer type
brings the repacked layout back while AMX stays off.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from pathlib import Path

import llama_cpp

from engine.catalog.gguf import LAYER_MATRIX, REPACKED_TYPES, read_gguf_shapes

# A matrix named for the repacked buffer that ggml cannot repack would abort the load: its rows
# must come in eights (REPACKED_TYPES and LAYER_MATRIX: engine/catalog/gguf.py, for the estimate too).
ROWS_PER_BLOCK = 8
_CPU_DEVICE = 0  # GGML_BACKEND_DEVICE_TYPE_CPU


class _Override(ctypes.Structure):
    _fields_ = [("pattern", ctypes.c_char_p), ("buft", ctypes.c_void_p)]


@dataclass
class Overrides:
    """A NULL-terminated llama_model_tensor_buft_override array; llama.cpp reads it while loading."""

    array: ctypes.Array[_Override]
    tensors: int

    @property
    def address(self) -> int:
        return ctypes.addressof(self.array)


def repackable_matrices(path: Path) -> list[str]:
    """The names of the layer matrices ggml would repack, read from the file's header."""
    try:
        _, shapes = read_gguf_shapes(path)
    except (OSError, ValueError, KeyError):
        return []  # llama.cpp will say what is wrong with the file
    return [name for name, dims, kind in shapes
            if kind in REPACKED_TYPES and len(dims) == 2 and dims[1] % ROWS_PER_BLOCK == 0
            and LAYER_MATRIX.match(name)]


def repack_overrides(path: Path) -> Overrides | None:
    """Overrides that put the file's repackable matrices in the repacked layout; None if there are none."""
    names = repackable_matrices(path)
    buffer_type = _repack_buffer_type() if names else None
    if buffer_type is None:
        return None
    array = (_Override * (len(names) + 1))()
    for entry, name in zip(array, names):
        entry.pattern = ("^" + re.escape(name) + "$").encode("ascii")
        entry.buft = buffer_type
    return Overrides(array, len(names))


def _repack_buffer_type() -> int | None:
    """ggml's "CPU_REPACK" buffer type, from the CPU device's list of extra buffer types."""
    from llama_cpp._ggml import libggml as ggml  # only where it is needed: it loads ggml's library by name
    ggml.ggml_backend_dev_by_type.restype = ctypes.c_void_p
    ggml.ggml_backend_dev_by_type.argtypes = [ctypes.c_int]
    ggml.ggml_backend_dev_backend_reg.restype = ctypes.c_void_p
    ggml.ggml_backend_dev_backend_reg.argtypes = [ctypes.c_void_p]
    ggml.ggml_backend_reg_get_proc_address.restype = ctypes.c_void_p
    ggml.ggml_backend_reg_get_proc_address.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    ggml.ggml_backend_buft_name.restype = ctypes.c_char_p
    ggml.ggml_backend_buft_name.argtypes = [ctypes.c_void_p]
    llama_cpp.llama_backend_init()
    device = ggml.ggml_backend_dev_by_type(_CPU_DEVICE)
    if not device:
        return None
    address = ggml.ggml_backend_reg_get_proc_address(ggml.ggml_backend_dev_backend_reg(device),
                                                     b"ggml_backend_dev_get_extra_bufts")
    if not address:
        return None
    extra_types = ctypes.CFUNCTYPE(ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)(address)(device)
    index = 0
    while extra_types and extra_types[index]:
        if ggml.ggml_backend_buft_name(extra_types[index]) == b"CPU_REPACK":
            return int(extra_types[index])
        index += 1
    return None
