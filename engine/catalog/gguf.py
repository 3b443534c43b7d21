"""GGUF files described from their header: metadata and the tensor table, never the weights.

The `gguf` package's GGUFReader turns every vocabulary string into a numpy view
(4 s of CPU for a 49k-token vocabulary, too slow for a dialog), so the header is
walked here with struct over an mmap, stepping over long arrays.
"""

from __future__ import annotations

import math
import mmap
import re
import struct
from collections.abc import Container
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.catalog.description import ModelDescription, ModelReadError
from engine.catalog.model_files import split_parts

_LAYER = re.compile(r"^blk\.(\d+)\.")
# ggml repacks these types into 8x8 blocks for its CPU matrix products (repack.cpp), and keeps the
# repacked matrix beside the mapped file's: the layers' matrix products only, never the token
# embedding, which is read by row lookups.
REPACKED_TYPES = frozenset({"Q4_0", "Q4_K", "IQ4_NL"})
LAYER_MATRIX = re.compile(r"^blk\.\d+\.(attn_(q|k|v|qkv|output)|ffn_(gate|up|down))\.weight$")


def describe_gguf(path: Path) -> ModelDescription:
    try:
        fields, tensors = read_gguf_header(path)
    except (OSError, ValueError, KeyError, struct.error) as error:
        raise ModelReadError(
            f"{path.name} could not be read as a GGUF file ({error}). It may be incomplete or not a "
            "GGUF model; download it again or choose another file.") from error
    file_bytes = path.stat().st_size
    if int(fields.get("split.count") or 1) > 1:
        tensors, file_bytes = _with_other_parts(path, fields, tensors)
    return describe_gguf_header(str(path), path.stem, fields, tensors, file_bytes)


def describe_gguf_header(path: str, name: str, fields: dict[str, Any], tensors: list[tuple[str, int, int, str]],
                         file_bytes: int) -> ModelDescription:
    """A description from a GGUF header already read (a local file, or the start of one on the Hub)."""
    arch = str(fields.get("general.architecture") or "unknown")

    def arch_int(key: str, default: int = 0) -> int:
        value = fields.get(f"{arch}.{key}")
        if isinstance(value, list):  # some models give per-layer head counts
            value = max(value) if value else default
        return int(value) if isinstance(value, (int, float)) else default

    heads, embedding, layers = arch_int("attention.head_count"), arch_int("embedding_length"), arch_int("block_count")
    tokens = fields.get("tokenizer.ggml.tokens")
    layer_bytes, output_bytes, tied = _split_layers(tensors, layers)
    return ModelDescription(
        path=path, kind="gguf", name=name, architecture=arch,
        n_params=sum(t[2] for t in tensors), file_bytes=file_bytes,
        quantization=_gguf_file_type(fields.get("general.file_type"), tensors),
        trained_context_length=arch_int("context_length"), layers=layers, heads=heads,
        kv_heads=arch_int("attention.head_count_kv", heads),
        head_dim=arch_int("attention.key_length") or (embedding // heads if heads else 0),
        embedding_length=embedding,
        vocab_size=arch_int("vocab_size") or (tokens.length if isinstance(tokens, SkippedArray) else 0),
        tensor_bytes=sum(t[1] for t in tensors),
        layer_bytes=layer_bytes, output_bytes=output_bytes, tied_embeddings=tied,
        repacked_bytes=sum(t[1] for t in tensors if t[3] in REPACKED_TYPES and LAYER_MATRIX.match(t[0])),
    )


def _with_other_parts(path: Path, fields: dict[str, Any],
                      tensors: list[tuple[str, int, int, str]]) -> tuple[list[tuple[str, int, int, str]], int]:
    """A split model: part 1 holds the metadata, the tensors are spread over all parts."""
    count, number = int(fields["split.count"]), int(fields.get("split.no") or 0)
    parts = split_parts(path)
    if number != 0:
        raise ModelReadError(f"{path.name} is part {number + 1} of {count} of a split model. "
                             "Choose part 1 (its name ends in -00001-of-...): it loads all the parts.")
    if len(parts) != count:
        raise ModelReadError(f"{path.name} is part 1 of a split model of {count} files, but its name does not "
                             "say so (NAME-00001-of-0000N.gguf), and llama.cpp finds the other parts by name.")
    missing = [part.name for part in parts[1:] if not part.is_file()]
    if missing:
        raise ModelReadError(f"{path.name} is part 1 of {count} of a split model, and {missing[0]} is not next to "
                             "it. Download all parts into the same folder.")
    total = path.stat().st_size
    everything = list(tensors)
    for part in parts[1:]:
        try:
            everything += read_gguf_header(part)[1]
        except (OSError, ValueError, KeyError, struct.error) as error:
            raise ModelReadError(f"{part.name} (part of a split model) could not be read ({error}). It may be "
                                 "incomplete; download it again.") from error
        total += part.stat().st_size
    return everything, total


@dataclass(frozen=True)
class SkippedArray:
    """A long metadata array (the vocabulary, merges) that was stepped over, not read."""

    length: int


_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY, _KEEP_ARRAY = 8, 9, 1024


def read_gguf_header(path: Path) -> tuple[dict[str, Any], list[tuple[str, int, int, str]]]:
    """Metadata and (name, bytes, elements, type) of each tensor, from a GGUF file's header.

    The `gguf` package's GGUFReader turns every vocabulary string into a numpy
    view: 4 s of CPU for a 49k-token vocabulary, too slow for a dialog. This
    walks the same format with struct and steps over long arrays.
    """
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType  # the format's own constants

    fields, shapes = read_gguf_shapes(path)
    tensors = []
    for name, dims, type_name in shapes:
        block, block_bytes = GGML_QUANT_SIZES[GGMLQuantizationType[type_name]]
        elements = math.prod(dims)
        tensors.append((name, elements // block * block_bytes, elements, type_name))
    return fields, tensors


def read_gguf_shapes(path: Path, whole: Container[str] = ()) -> tuple[dict[str, Any], list[tuple[str, tuple[int, ...], str]]]:
    """Metadata and (name, dimensions, type) of each tensor: what read_gguf_header sums up. Long arrays
    are stepped over (a SkippedArray) but those named in `whole`, e.g. the vocabulary's tokens."""
    from gguf import GGMLQuantizationType

    with open(path, "rb") as stream, mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != b"GGUF":
            raise ValueError(f"it starts with {bytes(data[:4])!r}, not GGUF")
        version, n_tensors, n_fields = struct.unpack_from("<IQQ", data, 4)
        if not 2 <= version <= 3:
            raise ValueError(f"GGUF version {version} is not supported")
        offset, fields = 24, {}
        for _ in range(n_fields):
            key, offset = _read_string(data, offset)
            (kind,) = struct.unpack_from("<I", data, offset)
            fields[key], offset = _read_value(data, offset + 4, kind, key in whole)
        shapes = []
        for _ in range(n_tensors):
            name, offset = _read_string(data, offset)
            (n_dims,) = struct.unpack_from("<I", data, offset)
            dims = struct.unpack_from(f"<{n_dims}Q", data, offset + 4)
            (type_id,) = struct.unpack_from("<I", data, offset + 4 + 8 * n_dims)
            offset += 4 + 8 * n_dims + 4 + 8  # dims, type, data offset
            shapes.append((name, tuple(dims), GGMLQuantizationType(type_id).name))
    return fields, shapes


def _read_string(data: mmap.mmap, offset: int) -> tuple[str, int]:
    (length,) = struct.unpack_from("<Q", data, offset)
    end = offset + 8 + length
    return data[offset + 8:end].decode("utf-8", errors="replace"), end


def _read_value(data: mmap.mmap, offset: int, kind: int, whole: bool = False) -> tuple[Any, int]:
    if kind == _STRING:
        return _read_string(data, offset)
    if kind != _ARRAY:
        (value,) = struct.unpack_from(_SCALARS[kind], data, offset)
        return value, offset + struct.calcsize(_SCALARS[kind])
    item_kind, length = struct.unpack_from("<IQ", data, offset)
    offset += 12
    keep = whole or length <= _KEEP_ARRAY
    if item_kind in _SCALARS:
        size = struct.calcsize(_SCALARS[item_kind])
        values = list(struct.unpack_from(f"<{length}{_SCALARS[item_kind][1]}", data, offset)) if keep else None
        return (values if keep else SkippedArray(length)), offset + size * length
    items = []
    for _ in range(length):  # arrays of strings (or of arrays): walk them, keep short ones
        item, offset = _read_value(data, offset, item_kind)
        if keep:
            items.append(item)
    return (items if keep else SkippedArray(length)), offset


def _split_layers(tensors: list[tuple[str, int, int, str]], layers: int) -> tuple[tuple[int, ...], int, bool]:
    """Bytes per repeating layer, and of the output head llama.cpp offloads last."""
    per_layer = [0] * layers
    output = 0
    names = {t[0]: t[1] for t in tensors}
    for name, n_bytes, _, _ in tensors:
        match = _LAYER.match(name)
        if match and int(match.group(1)) < layers:
            per_layer[int(match.group(1))] += n_bytes
        elif name.startswith("output"):
            output += n_bytes
    tied = "output.weight" not in names
    if tied:
        # llama.cpp duplicates the tied token embedding as the output weight on the GPU
        output += names.get("token_embd.weight", 0)
    return tuple(per_layer), output, tied


def _gguf_file_type(value: Any, tensors: list[tuple[str, int, int, str]]) -> str:
    from gguf import LlamaFileType

    if value is not None:
        try:
            name = LlamaFileType(int(value)).name
        except ValueError:
            name = ""
        if name:
            return "F32" if name == "ALL_F32" else name.removeprefix("MOSTLY_")
    # no file type recorded: name it after the type holding most of the bytes
    by_type: dict[str, int] = {}
    for _, n_bytes, _, type_name in tensors:
        by_type[type_name] = by_type.get(type_name, 0) + n_bytes
    return max(by_type, key=lambda k: by_type[k]) if by_type else "unknown"
