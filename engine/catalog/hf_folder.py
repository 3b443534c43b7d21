"""Hugging Face model folders described from config.json and the safetensors headers (no torch)."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any, Sequence

from engine.catalog.description import ModelDescription, ModelReadError
from engine.catalog.model_files import known_name

_SAFETENSORS_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
                      "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}


def is_hf_folder(path: Path) -> bool:
    return (path / "config.json").is_file() and any(path.glob("*.safetensors"))


def describe_hf_folder(folder: Path) -> ModelDescription:
    config = _read_config(folder)
    headers = [read_safetensors_header(file) for file in sorted(folder.glob("*.safetensors"))]
    if not headers:
        raise ModelReadError(f"{folder} has no .safetensors weights. Hearth reads Hugging Face folders "
                             "saved with safetensors; choose a folder that has them.")
    file_bytes = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
    return describe_hf_config(str(folder), _hf_name(folder), config, headers, file_bytes)


def describe_hf_config(path: str, name: str, config: dict[str, Any], headers: Sequence[dict[str, Any]],
                       file_bytes: int) -> ModelDescription:
    """A description from config.json and the safetensors headers (of a folder, or read from the Hub)."""
    text = config.get("text_config") or config  # multimodal configs nest the language model
    tensors = [(key, info) for header in headers for key, info in header.items() if key != "__metadata__"]
    n_params = sum(math.prod(info["shape"]) for _, info in tensors)
    kept = sum(math.prod(info["shape"]) for key, info in tensors if not _quantizable(key, info))
    heads = int(text.get("num_attention_heads") or 0)
    hidden = int(text.get("hidden_size") or 0)
    dtype = str(config.get("dtype") or config.get("torch_dtype") or text.get("torch_dtype") or "")
    architectures = config.get("architectures") or [config.get("model_type", "unknown")]
    return ModelDescription(
        path=path, kind="hf", name=name,
        architecture=str(architectures[0]), n_params=n_params, file_bytes=file_bytes,
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
    return known_name(folder)


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
