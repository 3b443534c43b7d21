"""Pictures in messages: which kinds are taken, told apart by their bytes, and what a model that cannot see says.

Shared by the engine (refusing a turn), the API (its 400s) and the window (the chip), so all three say
the same sentence.
"""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path

from engine.protocol import IMAGE_TYPES, ImagePart, ModelConfig, ModelInfo

# A picture's place in rendered prompt text, by its bytes' sha256 (runners/hf/vision.py, runners/llamacpp/pictures.py):
# private-use characters, which no chat text or template makes.
MARK_START = "\ue000image:"
MARK = MARK_START + "{}\ue001"
MARK_PATTERN = re.compile("\ue000image:([0-9a-f]{64})\ue001")


class ImageError(ValueError):
    """Bytes that are not a PNG, JPEG or WebP picture, or a URL that is not a data: URL of one."""


def sniff_mime(data: bytes) -> str | None:
    """The picture's type from its first bytes (never from a name or a claimed type); None if none of ours."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_part(data: bytes) -> ImagePart:
    mime = sniff_mime(data)
    if mime is None:
        raise ImageError("the image is not a PNG, JPEG or WebP picture")
    return ImagePart(data, mime)


def from_base64(text: str) -> ImagePart:
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ImageError(f"the image's base64 data is broken ({error})") from error
    return image_part(data)


def from_url(url: str) -> ImagePart:
    """A `data:image/...;base64,...` URL's picture; any other URL is refused (nothing is fetched for anyone)."""
    if url.startswith(("http://", "https://")):
        raise ImageError("image URLs are not fetched: send the picture itself as a data: URL "
                         "(data:image/png;base64,...)")
    if not url.startswith("data:"):
        raise ImageError("an image_url must be a data: URL (data:image/png;base64,...)")
    header, _, payload = url[5:].partition(",")
    kind, _, encoding = header.partition(";")
    if encoding != "base64":
        raise ImageError("an image data: URL must be base64 encoded (data:image/png;base64,...)")
    if kind and kind not in IMAGE_TYPES:
        raise ImageError(f"images of type {kind} are not taken: send PNG, JPEG or WebP")
    return from_base64(payload)


def data_url(image: ImagePart) -> str:
    """The picture as a data: URL, as OpenAI's image_url parts carry it."""
    return f"data:{image.mime};base64,{base64.b64encode(image.data).decode('ascii')}"


def cannot_see(info: ModelInfo) -> str:
    """Why this model takes no pictures, for a person."""
    if info.backend == "llamacpp":
        projector = projector_beside(info.path)
        if projector:
            return (f"This model cannot see images: {projector} is next to it, but llama.cpp could not use it as a "
                    f"vision projector for {info.name} (see the log)")
        return (f"This model cannot see images: {info.name} has no vision projector. Put its mmproj-*.gguf file "
                f"(from the model's download page) in the same folder, or choose it in Settings (Vision projector), "
                f"and load the model again")
    if info.backend == "remote":
        return f"This model cannot see images: {info.path} lists {info.name} as taking no pictures"
    return f"This model cannot see images: {info.name} has no vision encoder"


def projector_beside(model_path: str) -> str:
    """The name of a vision projector file (mmproj-*.gguf, as llama.cpp's repos ship them) in the model's folder."""
    folder = Path(model_path).parent if model_path else None
    if folder is None or not folder.is_dir():
        return ""
    try:
        names = sorted(p.name for p in folder.iterdir() if p.suffix.lower() == ".gguf" and "mmproj" in p.name.lower())
    except OSError:
        return ""
    return names[0] if names else ""


def projector_path(config: ModelConfig) -> Path | None:
    """The vision projector a llama.cpp model loads with: the config's, else an mmproj-*.gguf beside it; None where none."""
    if config.mmproj:
        return Path(config.mmproj)
    name = projector_beside(config.path)
    return Path(config.path).parent / name if name else None


def can_see(info: ModelInfo) -> bool:
    return "vision" in info.capabilities
