"""Random-weights GGUF files of a known shape, for speed checks where the real file cannot travel.

The default model (98 MB) is over what one run may carry to the GPU machine,
but its speed depends on its shape and tensor types, not on the values. So
`write_skeleton` keeps everything of the real file but the weights (the
tokenizer, the chat template, the hyperparameters, and the type of each
tensor role, ~2 MB), and `write_random` makes a loadable file from it there:
the same tensors (or a larger shape with the same vocabulary) filled with
valid random blocks: fp16 scales that keep the weights near N(0, 0.02) and
random quants, norms at 1. Greedy text from such a file is noise; tokens per
second, time to first token and memory are the real model's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

TYPES_KEY = "hearth.gpucheck.tensor_types"  # role -> ggml type name, kept in the skeleton only
WEIGHT_STD = 0.02
# block layout of the types written here: (bytes per block, values per block, fp16 scale fields)
BLOCKS = {"Q8_0": (34, 32, 1), "Q4_0": (18, 32, 1), "Q4_1": (20, 32, 2)}
QUANT_STD = {"Q8_0": 73.9, "Q4_0": 4.61, "Q4_1": 4.61}  # std of the uniform quant values of each type


@dataclass(frozen=True)
class LlamaShape:
    """The hyperparameters that decide a llama-architecture file's tensors."""

    layers: int
    embedding: int
    feed_forward: int
    heads: int
    kv_heads: int
    vocab: int
    tied: bool = True
    name: str = ""

    @property
    def head_dim(self) -> int:
        return self.embedding // self.heads

    @property
    def n_params(self) -> int:
        return sum(int(np.prod(spec.shape)) for spec in llama_tensors(self, {}))


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]  # ggml order: ne0 (the row length) first
    type: str  # GGMLQuantizationType name


def llama_tensors(shape: LlamaShape, types: dict[str, str]) -> list[TensorSpec]:
    """Every tensor llama.cpp wants for this shape; `types` by role ("attn_q.weight"), F32 where absent."""
    e, f, kv = shape.embedding, shape.feed_forward, shape.kv_heads * shape.head_dim
    q = shape.heads * shape.head_dim
    per_layer = {
        "attn_norm.weight": (e,), "attn_q.weight": (e, q), "attn_k.weight": (e, kv), "attn_v.weight": (e, kv),
        "attn_output.weight": (q, e), "ffn_norm.weight": (e,), "ffn_gate.weight": (e, f),
        "ffn_up.weight": (e, f), "ffn_down.weight": (f, e),
    }
    specs = [TensorSpec("token_embd.weight", (e, shape.vocab), types.get("token_embd.weight", "F32")),
             TensorSpec("output_norm.weight", (e,), "F32")]
    if not shape.tied:
        specs.append(TensorSpec("output.weight", (e, shape.vocab),
                                types.get("output.weight", types.get("token_embd.weight", "F32"))))
    for layer in range(shape.layers):
        specs += [TensorSpec(f"blk.{layer}.{role}", dims, types.get(role, "F32")) for role, dims in per_layer.items()]
    return specs


def role(name: str) -> str:
    """ "blk.7.attn_q.weight" -> "attn_q.weight"."""
    parts = name.split(".")
    return ".".join(parts[2:]) if parts[0] == "blk" else name


# ---------------------------------------------------------------- the skeleton (prepared on the CPU machine)


def write_skeleton(source: str | Path, target: Path, reader: Any = None) -> Path:
    """Every metadata field of `source`, no tensors, plus the type of each tensor role. `reader`: `source`
    already open (a GGUFReader; reading one takes seconds)."""
    import gguf

    reader = reader if reader is not None else gguf.GGUFReader(source)
    types = {role(t.name): t.tensor_type.name for t in reader.tensors}
    writer = gguf.GGUFWriter(target, arch=_architecture(reader))
    _copy_fields(reader, writer, {})
    writer.add_string(TYPES_KEY, json.dumps(types, sort_keys=True))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    return target


def read_shape(path: str | Path) -> LlamaShape:
    """The llama shape a GGUF (or skeleton) describes."""
    import gguf

    return shape_of(gguf.GGUFReader(path))


def shape_of(reader: Any) -> LlamaShape:
    """The shape of an open GGUFReader (reading one takes seconds: its vocabulary is ~100k strings)."""
    arch = _architecture(reader)

    def value(key: str) -> Any:
        field = reader.get_field(f"{arch}.{key}")
        if field is None:
            raise ValueError(f"not a llama-shaped GGUF: no {arch}.{key}")
        return field.contents()

    tokens = reader.get_field("tokenizer.ggml.tokens")
    vocab = len(tokens.data) if tokens is not None else int(value("vocab_size"))
    tied = not any(t.name == "output.weight" for t in reader.tensors)
    types = _types(reader)
    if types:  # a skeleton says it itself
        tied = "output.weight" not in types
    name = reader.get_field("general.name")
    return LlamaShape(int(value("block_count")), int(value("embedding_length")), int(value("feed_forward_length")),
                      int(value("attention.head_count")), int(value("attention.head_count_kv")), vocab, tied,
                      str(name.contents()) if name is not None else "")


def skeleton_types(skeleton: str | Path | Any) -> dict[str, str]:
    """The tensor type of each role a skeleton names: from its path, or from it already open (a GGUFReader)."""
    import gguf

    return _types(skeleton if isinstance(skeleton, gguf.GGUFReader) else gguf.GGUFReader(skeleton))


def _types(reader: Any) -> dict[str, str]:
    field = reader.get_field(TYPES_KEY)
    return json.loads(field.contents()) if field is not None else {}


def _architecture(reader: Any) -> str:
    import gguf

    field = reader.get_field(gguf.Keys.General.ARCHITECTURE)
    if field is None:
        raise ValueError("not a model GGUF: no general.architecture")
    return str(field.contents())


def _copy_fields(reader: Any, writer: Any, overrides: dict[str, Any]) -> None:
    import gguf

    for field in reader.fields.values():
        if field.name in (gguf.Keys.General.ARCHITECTURE, TYPES_KEY) or field.name.startswith("GGUF."):
            continue  # the writer adds the first two itself; the types are the skeleton's own
        value = overrides.get(field.name, field.contents())
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, value, field.types[0], sub_type=sub_type)


# ---------------------------------------------------------------- the random file (made where it runs)


def write_random(skeleton: str | Path, target: Path, shape: LlamaShape | None = None, seed: int = 0,
                 reader: Any = None, types: dict[str, str] | None = None,
                 fields: dict[str, Any] | None = None) -> Path:
    """A loadable GGUF: the skeleton's metadata, `shape` (default: the skeleton's own), random weights.

    `reader`: the skeleton already open (a GGUFReader), to write several files from one read. `types`:
    the tensor type of each role (default: the skeleton's). `fields`: metadata values that replace the
    skeleton's (a tokenizer padded to `shape.vocab` among them lets the vocabulary grow). Tensors are
    written one at a time: a file of any size takes the memory of its largest tensor.
    """
    import gguf

    reader = reader if reader is not None else gguf.GGUFReader(skeleton)
    arch, base = _architecture(reader), shape_of(reader)
    shape = shape or base
    specs = llama_tensors(shape, types if types is not None else _types(reader))
    writer = gguf.GGUFWriter(target, arch=arch)
    overrides = dict(fields or {})
    padded = "tokenizer.ggml.tokens" in overrides
    _copy_fields(reader, writer, {**_shape_overrides(arch, shape, replace(base, vocab=shape.vocab) if padded else base),
                                  **overrides})
    for spec in specs:
        data_shape, dtype, nbytes = _stored_shape(spec)
        raw = None if spec.type == "F32" else gguf.GGMLQuantizationType[spec.type]
        writer.add_tensor_info(spec.name, data_shape, dtype, nbytes, raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    rng = np.random.default_rng(seed)
    for spec in specs:
        writer.write_tensor_data(random_tensor(spec, rng))
    writer.close()
    return target


def write_header(target: Path, shape: LlamaShape, types: dict[str, str], file_type: int, arch: str = "llama") -> Path:
    """A GGUF of `shape` whose tensors are listed but not written: the header a real file of this shape and
    these types (any ggml type, Q4_K included) would have, and the file as long as that file (sparse: it
    takes no disk). For what reads headers only (the memory estimate); llama.cpp cannot run it."""
    import gguf

    writer = gguf.GGUFWriter(target, arch=arch)
    writer.add_name(shape.name or f"random {shape.layers}x{shape.embedding}")
    writer.add_file_type(file_type)
    writer.add_vocab_size(shape.vocab)
    writer.add_context_length(8192)
    writer.add_block_count(shape.layers)
    writer.add_embedding_length(shape.embedding)
    writer.add_feed_forward_length(shape.feed_forward)
    writer.add_head_count(shape.heads)
    writer.add_head_count_kv(shape.kv_heads)
    data_bytes = 0
    for spec in llama_tensors(shape, types):
        kind = gguf.GGMLQuantizationType[spec.type]
        values_per_block, block_bytes = gguf.GGML_QUANT_SIZES[kind]
        row_bytes = spec.shape[0] // values_per_block * block_bytes
        byte_shape = (*reversed(spec.shape[1:]), row_bytes)
        nbytes = row_bytes * int(np.prod(spec.shape[1:]))
        writer.add_tensor_info(spec.name, byte_shape, np.dtype(np.uint8), nbytes, raw_dtype=kind)
        data_bytes += -(-nbytes // writer.data_alignment) * writer.data_alignment
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    with open(target, "r+b") as stream:
        stream.truncate(target.stat().st_size + data_bytes)
    return target


def scaled(base: LlamaShape, **change: Any) -> LlamaShape:
    return replace(base, **change)


def _shape_overrides(arch: str, shape: LlamaShape, base: LlamaShape) -> dict[str, Any]:
    if shape == base:
        return {}
    if shape.vocab != base.vocab:
        raise ValueError(f"the vocabulary is the skeleton's ({base.vocab} tokens); {shape.vocab} was asked for")
    return {
        f"{arch}.block_count": shape.layers, f"{arch}.embedding_length": shape.embedding,
        f"{arch}.feed_forward_length": shape.feed_forward, f"{arch}.attention.head_count": shape.heads,
        f"{arch}.attention.head_count_kv": shape.kv_heads, f"{arch}.rope.dimension_count": shape.head_dim,
        "general.name": shape.name or f"random {shape.layers}x{shape.embedding}",
    }


def _stored_shape(spec: TensorSpec) -> tuple[tuple[int, ...], Any, int]:
    """(numpy shape as the writer wants it, numpy dtype, bytes)."""
    rows = int(np.prod(spec.shape[1:])) if len(spec.shape) > 1 else 1
    numpy_shape = tuple(reversed(spec.shape))
    if spec.type == "F32":
        return numpy_shape, np.float32, 4 * rows * spec.shape[0]
    if spec.type == "F16":
        return numpy_shape, np.float16, 2 * rows * spec.shape[0]
    block_bytes, block_values, _ = _block(spec)
    row_bytes = spec.shape[0] // block_values * block_bytes
    return (*numpy_shape[:-1], row_bytes), np.uint8, rows * row_bytes


def _block(spec: TensorSpec) -> tuple[int, int, int]:
    if spec.type not in BLOCKS:
        raise ValueError(f"{spec.name}: random {spec.type} blocks are not written here (F32, F16, {', '.join(BLOCKS)})")
    block_bytes, block_values, scales = BLOCKS[spec.type]
    if spec.shape[0] % block_values:
        raise ValueError(f"{spec.name}: a row of {spec.shape[0]} is not a whole number of {spec.type} blocks")
    return block_bytes, block_values, scales


def random_tensor(spec: TensorSpec, rng: np.random.Generator) -> np.ndarray:
    numpy_shape, dtype, nbytes = _stored_shape(spec)
    if spec.type in ("F32", "F16"):
        if spec.name.endswith("norm.weight"):
            return np.ones(numpy_shape, dtype=dtype)
        return (rng.standard_normal(numpy_shape, dtype=np.float32) * WEIGHT_STD).astype(dtype)
    block_bytes, _, scales = _block(spec)
    data = np.frombuffer(rng.bytes(nbytes), dtype=np.uint8).reshape(-1, block_bytes).copy()
    scale = np.float16(WEIGHT_STD / QUANT_STD[spec.type])
    data[:, 0:2] = np.frombuffer(scale.tobytes(), dtype=np.uint8)
    if scales == 2:  # Q4_1: w = d * q + m with q in 0..15: centre it
        data[:, 2:4] = np.frombuffer(np.float16(-7.5 * float(scale)).tobytes(), dtype=np.uint8)
    return data.reshape(numpy_shape)
