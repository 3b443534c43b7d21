"""Describing a model on the Hub without downloading it: the start of its files, read with Range requests.

A GGUF header (metadata and tensor table) sits at the start of the file; config.json
and the JSON headers of the safetensors files say the same for a folder. That is
all the memory estimate needs. One repo's GGUF files share their architecture, so
one header is read (the smallest file's) and the others are scaled by their size.
"""

from __future__ import annotations

import dataclasses
import json
import re
import struct
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from engine.catalog.description import ModelDescription
from engine.catalog.gguf import REPACKED_TYPES, describe_gguf_header, read_gguf_header
from engine.catalog.hf_folder import describe_hf_config
from engine.catalog.models import describe
from engine.hub.client import call, headers
from engine.hub.errors import HubError
from engine.hub.listing import HubFile, ModelChoice, RepoListing
from engine.hub.settings import READ_TIMEOUT_S, HubSettings

FIRST_READ = 1 << 20
MAX_HEADER = 64 << 20  # a 256k-token vocabulary with merges is ~10 MiB; more than this is not a header


def file_url(settings: HubSettings, repo_id: str, commit: str, path: str) -> str:
    from huggingface_hub import hf_hub_url

    return hf_hub_url(repo_id, path, revision=commit, endpoint=settings.endpoint)


def read_range(settings: HubSettings, repo_id: str, commit: str, file: HubFile, start: int, end: int) -> bytes:
    """Bytes [start, end) of a file on the Hub."""
    url = file_url(settings, repo_id, commit, file.path)
    request_headers = {**headers(settings), "Range": f"bytes={start}-{max(start, end - 1)}",
                       "Accept-Encoding": "identity"}

    def fetch() -> bytes:
        from huggingface_hub.utils import get_session, hf_raise_for_status

        with get_session().stream("GET", url, headers=request_headers, timeout=READ_TIMEOUT_S) as response:
            if response.status_code >= 400:
                response.read()
            hf_raise_for_status(response)
            skip = start if response.status_code == 200 else 0  # 200: the server ignored Range
            data = bytearray()
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) >= skip + end - start:
                    break  # leaving the block closes the connection: the rest is never fetched
            return bytes(data[skip:skip + end - start])

    return call(settings, repo_id, fetch)


def describe_choices(listing: RepoListing, settings: HubSettings,
                     local: dict[str, str] | None = None) -> dict[str, ModelDescription]:
    """A description for every choice, keyed like the choices; a local copy is read exactly."""
    local = local or {}
    found: dict[str, ModelDescription] = {}
    families: dict[str, list[ModelChoice]] = {}
    for choice in listing.choices:
        if choice.kind == "gguf":
            families.setdefault(family(choice), []).append(choice)
    for members in families.values():  # one header per model; its other quantizations scale by size
        exact = {c.key: describe(local[c.key]) for c in members if c.key in local}
        reference = next(iter(exact.values()), None) or describe_gguf_remote(
            listing, min(members, key=lambda c: c.model_bytes), settings)
        for choice in members:
            found[choice.key] = exact.get(choice.key) or scaled(reference, choice)
    folders = [choice for choice in listing.choices if choice.kind == "hf"]
    if folders:
        key = folders[0].key
        folder = describe(local[key]) if key in local else describe_folder_remote(listing, folders[0], settings)
        found.update({choice.key: folder for choice in folders})
    return found


def family(choice: ModelChoice) -> str:
    """Which model a GGUF file quantizes: its name without the quantization and the part numbers.

    Most repos hold one model in many quantizations; some hold several sizes
    (1.5B and 7B), which must not share a header.
    """
    name = re.sub(r"-\d{5}-of-\d{5}\.gguf$|\.gguf$", "", PurePosixPath(choice.key).name, flags=re.IGNORECASE)
    if choice.quant:
        name = re.sub(re.escape(choice.quant), "", name, flags=re.IGNORECASE)
    return re.sub(r"[-._ ]+", "-", name).strip("-").lower()


def describe_gguf_remote(listing: RepoListing, choice: ModelChoice, settings: HubSettings) -> ModelDescription:
    """Read the header of every part of one GGUF choice (part 1 holds the metadata)."""
    fields: dict[str, Any] = {}
    tensors: list[tuple[str, int, int, str]] = []
    for index, part in enumerate(file for file in choice.model_files if file.path.lower().endswith(".gguf")):
        part_fields, part_tensors = _remote_gguf_header(listing, part, settings)
        if index == 0:
            fields = part_fields
        tensors += part_tensors
    name = PurePosixPath(choice.key).name.removesuffix(".gguf")
    return describe_gguf_header(f"{listing.repo_id}/{choice.key}", name, fields, tensors, choice.model_bytes)


def _remote_gguf_header(listing: RepoListing, file: HubFile,
                        settings: HubSettings) -> tuple[dict[str, Any], list[tuple[str, int, int, str]]]:
    size = min(FIRST_READ, file.size)
    while True:
        data = read_range(settings, listing.repo_id, listing.commit, file, 0, size)
        try:
            return _parse_gguf_prefix(data)
        except (ValueError, KeyError, struct.error, OverflowError) as error:
            if size >= min(MAX_HEADER, file.size):
                raise HubError(f"{file.path} in {listing.repo_id} does not start like a GGUF file ({error}).") \
                    from error
            size = min(size * 4, MAX_HEADER, file.size)  # the header is longer than what was read


def _parse_gguf_prefix(data: bytes) -> tuple[dict[str, Any], list[tuple[str, int, int, str]]]:
    # read_gguf_header maps a file; a cut-short header fails it with struct.error, never with wrong numbers,
    # because every field is read with unpack_from, which refuses to read past the end
    with tempfile.TemporaryDirectory(prefix="hearth-gguf-") as folder:
        path = Path(folder) / "header.gguf"
        path.write_bytes(data)
        return read_gguf_header(path)


def scaled(reference: ModelDescription, choice: ModelChoice) -> ModelDescription:
    """Another quantization of the same model: the same shape, weights in proportion to the file size."""
    if choice.key == reference.path.split("/", 2)[-1]:
        return reference
    metadata = max(reference.file_bytes - reference.tensor_bytes, 0)
    tensor_bytes = max(choice.model_bytes - metadata, 0)
    ratio = tensor_bytes / reference.tensor_bytes if reference.tensor_bytes else 1.0
    return dataclasses.replace(
        reference, path=choice.key, name=PurePosixPath(choice.key).name.removesuffix(".gguf"),
        file_bytes=choice.model_bytes, tensor_bytes=tensor_bytes, quantization=choice.quant or "unknown",
        layer_bytes=tuple(int(b * ratio) for b in reference.layer_bytes),
        output_bytes=int(reference.output_bytes * ratio), repacked_bytes=_repacked(reference, choice, ratio))


def _repacked(reference: ModelDescription, choice: ModelChoice, ratio: float) -> int:
    """The repacked copy llama.cpp keeps on the CPU, for a quantization whose header was not read:
    the reference's in proportion where both are one type, else the layers' bytes where the type
    is one ggml repacks (a little high for mixes like Q4_K_M), else none."""
    quant = (choice.quant or "").upper()
    if quant == reference.quantization.upper():
        return int(reference.repacked_bytes * ratio)
    if "_".join(quant.split("_")[:2]) in REPACKED_TYPES:  # Q4_K_M -> Q4_K
        return int(sum(reference.layer_bytes) * ratio)
    return 0


def describe_folder_remote(listing: RepoListing, choice: ModelChoice, settings: HubSettings) -> ModelDescription:
    """config.json and the safetensors headers (8 bytes of length, then JSON) of a folder on the Hub."""
    by_name = {file.path: file for file in choice.files}
    config_file = by_name["config.json"]
    try:
        config = json.loads(read_range(settings, listing.repo_id, listing.commit, config_file, 0, config_file.size))
        headers_read = [_safetensors_header(listing, file, settings) for name, file in sorted(by_name.items())
                        if name.endswith(".safetensors")]
    except (ValueError, struct.error) as error:
        raise HubError(f"{listing.repo_id}: config.json or a safetensors header could not be read ({error}).") \
            from error
    return describe_hf_config(listing.repo_id, listing.repo_id, config, headers_read, choice.download_bytes)


def _safetensors_header(listing: RepoListing, file: HubFile, settings: HubSettings) -> dict[str, Any]:
    (length,) = struct.unpack("<Q", read_range(settings, listing.repo_id, listing.commit, file, 0, 8))
    if length > MAX_HEADER:
        raise ValueError(f"{file.path} claims a {length}-byte header")
    header = json.loads(read_range(settings, listing.repo_id, listing.commit, file, 8, 8 + length))
    if not isinstance(header, dict):
        raise ValueError(f"{file.path} has a malformed header")
    return header

