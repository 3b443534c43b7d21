"""Finding and describing models: GGUF metadata, Hugging Face folders, the default.

Describing never loads a model: GGUF files are read with the `gguf` package's
reader (header and tensor table only), Hugging Face folders through config.json
and the JSON headers of their safetensors files (no torch import).
"""

from __future__ import annotations

import json
import math
import mmap
import os
import re
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Literal, Sequence

from engine.catalog.default_model import default_model_path

ModelKind = Literal["gguf", "hf"]
_LAYER = re.compile(r"^blk\.(\d+)\.")
_SAFETENSORS_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
                      "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}


class ModelReadError(Exception):
    """A model file or folder that cannot be described, in words a person can act on."""


@dataclass(frozen=True)
class ModelDescription:
    """What a model is and how big its parts are; everything the estimate needs."""

    path: str  # the GGUF file, or the Hugging Face folder
    kind: ModelKind
    name: str
    architecture: str
    n_params: int
    file_bytes: int  # on disk (all files of a folder)
    quantization: str  # GGUF file type ("Q4_1", "Q4_K_M", "F16") or HF dtype ("bf16")
    trained_context_length: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    embedding_length: int
    vocab_size: int
    tensor_bytes: int  # sum of all tensor sizes as stored
    layer_bytes: tuple[int, ...] = ()  # GGUF: bytes of blk.N.* for each layer
    output_bytes: int = 0  # GGUF: the output head llama.cpp offloads with the last layer
    unquantized_params: int = 0  # HF: embeddings, norms, biases, lm_head (bitsandbytes keeps them)
    dtype: str = ""  # HF: the dtype in config.json ("bfloat16")
    tied_embeddings: bool = False

    @property
    def default_backend(self) -> Literal["llamacpp", "hf"]:
        return "llamacpp" if self.kind == "gguf" else "hf"

    def summary(self) -> str:
        """One line for a list entry."""
        return (f"{self.architecture} · {format_count(self.n_params)} parameters · "
                f"{self.quantization} · {format_bytes(self.file_bytes)} · "
                f"trained context {self.trained_context_length:,}")


@dataclass(frozen=True)
class ModelEntry:
    """One model the dialog can offer: where it was found and what it is."""

    path: str
    source: str  # "Bundled default", "Recently used", "Models folder", "Hugging Face cache"
    description: ModelDescription | None
    error: str = ""  # why it could not be described


def format_bytes(count: int | float) -> str:
    value = float(count)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def format_count(count: int) -> str:
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if count >= size:
            return f"{count / size:.1f}{unit}"
    return str(count)


def describe(path: str | os.PathLike[str]) -> ModelDescription:
    """Describe a GGUF file or a Hugging Face folder; raises ModelReadError."""
    target = Path(path).expanduser()
    if not target.exists():
        raise ModelReadError(f"{target} does not exist. Check the path, or choose another model.")
    stat = target.stat()
    # absolute, not resolved: a hub cache file is a link to a blob named by its hash
    return _describe_cached(str(target.absolute()), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=64)
def _describe_cached(path: str, mtime_ns: int, size: int) -> ModelDescription:
    # mtime and size are part of the key so that a replaced file is read again
    target = Path(path)
    if target.is_dir():
        return _describe_hf_folder(target)
    return _describe_gguf(target)


# ---------------------------------------------------------------- GGUF


def _describe_gguf(path: Path) -> ModelDescription:
    try:
        fields, tensors = read_gguf_header(path)
    except (OSError, ValueError, KeyError, struct.error) as error:
        raise ModelReadError(
            f"{path.name} could not be read as a GGUF file ({error}). It may be incomplete or not a "
            "GGUF model; download it again or choose another file.") from error
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
        path=str(path), kind="gguf", name=path.stem, architecture=arch,
        n_params=sum(t[2] for t in tensors), file_bytes=path.stat().st_size,
        quantization=_gguf_file_type(fields.get("general.file_type"), tensors),
        trained_context_length=arch_int("context_length"), layers=layers, heads=heads,
        kv_heads=arch_int("attention.head_count_kv", heads),
        head_dim=arch_int("attention.key_length") or (embedding // heads if heads else 0),
        embedding_length=embedding,
        vocab_size=arch_int("vocab_size") or (tokens.length if isinstance(tokens, SkippedArray) else 0),
        tensor_bytes=sum(t[1] for t in tensors),
        layer_bytes=layer_bytes, output_bytes=output_bytes, tied_embeddings=tied,
    )


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
            fields[key], offset = _read_value(data, offset + 4, kind)
        tensors = []
        for _ in range(n_tensors):
            name, offset = _read_string(data, offset)
            (n_dims,) = struct.unpack_from("<I", data, offset)
            dims = struct.unpack_from(f"<{n_dims}Q", data, offset + 4)
            (type_id,) = struct.unpack_from("<I", data, offset + 4 + 8 * n_dims)
            offset += 4 + 8 * n_dims + 4 + 8  # dims, type, data offset
            quant = GGMLQuantizationType(type_id)
            block, block_bytes = GGML_QUANT_SIZES[quant]
            elements = math.prod(dims)
            tensors.append((name, elements // block * block_bytes, elements, quant.name))
    return fields, tensors


def _read_string(data: mmap.mmap, offset: int) -> tuple[str, int]:
    (length,) = struct.unpack_from("<Q", data, offset)
    end = offset + 8 + length
    return data[offset + 8:end].decode("utf-8", errors="replace"), end


def _read_value(data: mmap.mmap, offset: int, kind: int) -> tuple[Any, int]:
    if kind == _STRING:
        return _read_string(data, offset)
    if kind != _ARRAY:
        (value,) = struct.unpack_from(_SCALARS[kind], data, offset)
        return value, offset + struct.calcsize(_SCALARS[kind])
    item_kind, length = struct.unpack_from("<IQ", data, offset)
    offset += 12
    keep = length <= _KEEP_ARRAY
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


# ---------------------------------------------------------------- Hugging Face folders


def is_hf_folder(path: Path) -> bool:
    return (path / "config.json").is_file() and any(path.glob("*.safetensors"))


def _describe_hf_folder(folder: Path) -> ModelDescription:
    config = _read_config(folder)
    text = config.get("text_config") or config  # multimodal configs nest the language model
    headers = [read_safetensors_header(file) for file in sorted(folder.glob("*.safetensors"))]
    if not headers:
        raise ModelReadError(f"{folder} has no .safetensors weights. Hearth reads Hugging Face folders "
                             "saved with safetensors; choose a folder that has them.")
    tensors = [(name, info) for header in headers for name, info in header.items() if name != "__metadata__"]
    n_params = sum(math.prod(info["shape"]) for _, info in tensors)
    kept = sum(math.prod(info["shape"]) for name, info in tensors if not _quantizable(name, info))
    heads = int(text.get("num_attention_heads") or 0)
    hidden = int(text.get("hidden_size") or 0)
    dtype = str(config.get("dtype") or config.get("torch_dtype") or text.get("torch_dtype") or "")
    architectures = config.get("architectures") or [config.get("model_type", "unknown")]
    return ModelDescription(
        path=str(folder), kind="hf", name=_hf_name(folder),
        architecture=str(architectures[0]), n_params=n_params,
        file_bytes=sum(f.stat().st_size for f in folder.iterdir() if f.is_file()),
        quantization=_hf_quantization(config, tensors),
        trained_context_length=int(text.get("max_position_embeddings") or 0),
        layers=int(text.get("num_hidden_layers") or 0), heads=heads,
        kv_heads=int(text.get("num_key_value_heads") or heads),
        head_dim=int(text.get("head_dim") or (hidden // heads if heads else 0)),
        embedding_length=hidden, vocab_size=int(text.get("vocab_size") or 0),
        tensor_bytes=sum(_tensor_bytes(info) for _, info in tensors),
        unquantized_params=kept, dtype=dtype,
        tied_embeddings=bool(text.get("tie_word_embeddings", config.get("tie_word_embeddings", False))),
    )


def _hf_name(folder: Path) -> str:
    # in the hub cache a snapshot folder is a commit hash under models--org--name
    cache_repo = folder.parent.parent.name
    if folder.parent.name == "snapshots" and cache_repo.startswith("models--"):
        return cache_repo.removeprefix("models--").replace("--", "/")
    return folder.name


def _read_config(folder: Path) -> dict[str, Any]:
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise ModelReadError(f"{folder} has no config.json, so it is not a Hugging Face model folder. "
                             "Choose the folder that holds config.json and the .safetensors files.") from error
    except (OSError, ValueError) as error:
        raise ModelReadError(f"{folder / 'config.json'} could not be read ({error}). "
                             "Download the model again or fix the file.") from error
    if not isinstance(config, dict):
        raise ModelReadError(f"{folder / 'config.json'} is not a model configuration (a JSON object).")
    return config


def read_safetensors_header(file: Path) -> dict[str, Any]:
    """The JSON header of a .safetensors file: tensor names, dtypes and shapes."""
    try:
        with open(file, "rb") as stream:
            (length,) = struct.unpack("<Q", stream.read(8))
            if length > 100_000_000:  # a real header is kilobytes; this is not safetensors
                raise ValueError(f"header length {length} is implausible")
            header = json.loads(stream.read(length))
    except (OSError, ValueError, struct.error) as error:
        raise ModelReadError(f"{file.name} is not a readable safetensors file ({error}). "
                             "It may be incomplete; download it again.") from error
    if not isinstance(header, dict):
        raise ModelReadError(f"{file.name} has a malformed safetensors header.")
    return header


def _tensor_bytes(info: dict[str, Any]) -> int:
    start, end = info.get("data_offsets", (0, 0))
    return int(end) - int(start)


def _quantizable(name: str, info: dict[str, Any]) -> bool:
    """Would bitsandbytes quantize this tensor? Linear weights only, not embeddings or the head."""
    return len(info["shape"]) == 2 and name.endswith(".weight") and "embed" not in name and "lm_head" not in name


def _hf_quantization(config: dict[str, Any], tensors: list[tuple[str, dict[str, Any]]]) -> str:
    quant = config.get("quantization_config")
    if isinstance(quant, dict) and quant.get("quant_method"):
        return str(quant["quant_method"])
    by_dtype: dict[str, int] = {}
    for _, info in tensors:
        by_dtype[info["dtype"]] = by_dtype.get(info["dtype"], 0) + _tensor_bytes(info)
    return max(by_dtype, key=lambda k: by_dtype[k]).lower() if by_dtype else "unknown"


# ---------------------------------------------------------------- discovery


def models_folder() -> Path:
    """Where a user may drop GGUF files or HF folders: <user data dir>/Hearth/models."""
    import platformdirs

    return platformdirs.user_data_path("Hearth", appauthor=False) / "models"


def discover(recent: Sequence[str] = (), folder: Path | None = None,
             hf_cache: Path | None | Literal[False] = None) -> list[ModelEntry]:
    """Every model Hearth can offer, the default first; no network is touched.

    `hf_cache`: None for huggingface_hub's own cache location, False to skip it.
    """
    found: list[tuple[str, str]] = []
    default = default_model_path()
    if default is not None:
        found.append((str(default), "Bundled default"))
    found += [(path, "Recently used") for path in recent if Path(path).exists()]
    found += [(str(path), "Models folder") for path in _scan_folder(folder or models_folder())]
    if hf_cache is not False:
        found += [(str(path), "Hugging Face cache") for path in _scan_hf_cache(hf_cache)]
    return [_entry(path, source) for path, source in _unique(found)]


def _unique(found: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    seen: set[str] = set()
    unique = []
    for path, source in found:
        key = os.path.normcase(str(Path(path).resolve()))
        if key not in seen:
            seen.add(key)
            unique.append((path, source))
    return unique


def _entry(path: str, source: str) -> ModelEntry:
    try:
        return ModelEntry(path, source, describe(path))
    except ModelReadError as error:
        return ModelEntry(path, source, None, str(error))


def _scan_folder(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    found = sorted(folder.rglob("*.gguf"))
    found += sorted(config.parent for config in folder.rglob("config.json") if is_hf_folder(config.parent))
    return found


def _scan_hf_cache(cache: Path | None) -> list[Path]:
    try:
        from huggingface_hub import scan_cache_dir
    except ImportError:  # the hub library comes with the transformers extra only
        return []
    try:
        info = scan_cache_dir(cache) if cache is not None else scan_cache_dir()
    except Exception:  # CacheNotFound, or an unreadable cache: there is simply nothing to offer
        return []
    found: list[Path] = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model":
            continue
        for revision in repo.revisions:
            snapshot = Path(revision.snapshot_path)
            if is_hf_folder(snapshot):
                found.append(snapshot)
            found += sorted(snapshot.rglob("*.gguf"))
    return found
