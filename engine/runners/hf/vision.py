"""Pictures for the transformers runner: the image's embeddings in the chat's own packed sequence.

A vision model (AutoProcessor + the model's own class, no remote code) turns a picture into a run of
image-token embeddings. Here each picture gets a run of ids of its own past the vocabulary
(`base` + its offset in the registry), so a slot's history says exactly which picture sits where:
the longest-common-prefix reuse and the shared-prefix copy work for image chats as for text, and
the step stays ONE packed forward pass, the embeddings of its image ids taken from the picture's
features (computed once per picture, the vision tower run when a step first needs them) and the
rest from the model's embedding table.

`render` leaves a marker for each picture in the prompt text; `tokenize` puts the processor's own
expansion of the kind's placeholder in its place (LLaVA's run of <image>, Idefics3's tiles with their
<fake_token_around_image>, Gemma 3's <start_of_image> run ...) and tokenizes the whole prompt as the
processor does, then gives the image tokens, in order, the pictures' ids. What differs between kinds
(the placeholder, M-RoPE, attention within a picture) is vision_kinds.py's.
"""

from __future__ import annotations

import hashlib
import inspect
import io
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import torch

from engine.images import MARK, MARK_PATTERN
from engine.protocol import ChatMessage, ImagePart
from engine.runners.base import RunnerError
from engine.runners.hf.vision_kinds import VisionKind


@dataclass
class Picture:
    expansion: list[int]  # the processor's ids for this picture alone, image tokens already replaced
    inputs: dict[str, torch.Tensor]  # pixel_values and what else the vision tower takes
    first_id: int
    count: int  # image tokens: rows of features
    text: str | None = None  # the processor's expansion as text; None where it does not decode back to `expansion`
    grid: tuple[int, int, int] | None = None  # (frames, rows, columns) of its image tokens, for M-RoPE
    features: torch.Tensor | None = None  # [count, hidden], on the model's device


def is_vision_config(raw: dict[str, Any]) -> bool:
    """A folder's config.json of an image-text-to-text model (it names a vision tower)."""
    return isinstance(raw.get("vision_config"), dict)


class Pictures:
    """The pictures a runner has seen, by content (the same bytes: the same ids, so caches match)."""

    def __init__(self, model: Any, processor: Any, device: torch.device, base: int, kind: VisionKind) -> None:
        self.model = model
        self.processor = processor
        self.kind = kind
        self.placeholder = kind.placeholder_text(processor)
        self.device = device
        self.base = base  # first id past every id the embedding table and the logits know
        self.image_token_id = int(model.config.image_token_id if hasattr(model.config, "image_token_id")
                                  else model.config.image_token_index)
        self._by_hash: dict[str, Picture] = {}
        self._by_id: list[tuple[int, Picture]] = []  # (first id, picture), in id order
        self._next_id = base
        self._takes = set(inspect.signature(model.get_image_features).parameters)

    # ------------------------------------------------------------ prompt text and ids

    def render(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        """The messages with a marker before each one's text for each of its pictures (read here, now)."""
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
            picture = Image.open(io.BytesIO(image.data)).convert("RGB")
        except (UnidentifiedImageError, OSError, ValueError) as error:
            raise RunnerError(f"the image ({image.mime}, {len(image.data):,} bytes) could not be read: {error}") from error
        out = self.kind.process(self.processor, picture)
        ids = [int(i) for i in out["input_ids"][0].tolist()]
        count = sum(1 for i in ids if i == self.image_token_id)
        if count == 0:
            raise RunnerError(f"this model's processor made no image tokens of {self.placeholder!r}; its files and "
                              "the model's config do not agree")
        first = self._next_id
        self._next_id += count
        expansion, offset = [], 0
        for token in ids:
            if token == self.image_token_id:
                token, offset = first + offset, offset + 1
            expansion.append(token)
        inputs = {k: v for k, v in out.items() if k not in ("input_ids", "attention_mask") and k in self._takes}
        entry = Picture(expansion, inputs, first, count, self._as_text(ids), self._grid(out, count))
        self._by_id.append((first, entry))
        return entry

    def _as_text(self, ids: list[int]) -> str | None:
        tokenizer = self.processor.tokenizer
        text = str(tokenizer.decode(ids))
        return text if list(tokenizer.encode(text, add_special_tokens=False)) == ids else None

    def _grid(self, out: Any, count: int) -> tuple[int, int, int] | None:
        """Qwen2-VL's merged grid of the picture's tokens: its frames, rows and columns."""
        if not self.kind.mrope:
            return None
        merge = int(self.model.config.vision_config.spatial_merge_size)
        frames, rows, columns = (int(x) for x in out["image_grid_thw"][0].tolist())
        grid = (frames, rows // merge, columns // merge)
        if grid[0] * grid[1] * grid[2] != count:
            raise RunnerError(f"the picture's grid {grid} does not hold its {count} image tokens")
        return grid

    def tokens_for(self, width: int, height: int) -> int:
        """The tokens a picture of this size takes in the prompt (the processor's own count, before sending)."""
        return self.kind.prompt_tokens(self.processor, width, height)

    def tokenize(self, text: str, encode: Callable[[str, bool], list[int]]) -> list[int]:
        """Ids of a prompt with markers, as the processor would make them; `encode(text, first)` tokenizes text."""
        pictures = [self._by_hash.get(key) for key in MARK_PATTERN.findall(text)]
        known = [picture for picture in pictures if picture is not None]
        if len(known) < len(pictures):
            raise RunnerError("a picture in this conversation was not read first (render_chat)")
        if any(picture.text is None for picture in known):
            return self._spliced(text, encode)
        expanded = MARK_PATTERN.sub(lambda match: str(self._by_hash[match.group(1)].text), text)
        return self._numbered(encode(expanded, True), known)

    def _numbered(self, ids: list[int], pictures: list[Picture]) -> list[int]:
        """The image tokens of `ids` given, in order, the ids of `pictures`."""
        out: list[int] = []
        queue = iter(pictures)
        current: Picture | None = None
        offset = 0
        for token in ids:
            if token == self.image_token_id:
                if current is None or offset == current.count:
                    current, offset = next(queue, None), 0
                    if current is None:
                        raise RunnerError("the prompt holds more image tokens than its pictures make (is the "
                                          f"model's image token {self.placeholder!r} typed in the text?)")
                token, offset = current.first_id + offset, offset + 1
            out.append(token)
        if next(queue, None) is not None or (current is not None and offset != current.count):
            raise RunnerError("the prompt's image tokens do not match its pictures; the chat template may drop text")
        return out

    def _spliced(self, text: str, encode: Callable[[str, bool], list[int]]) -> list[int]:
        """Text between markers tokenized alone, each picture's ids in between (an expansion that is not text)."""
        ids: list[int] = []
        last = 0
        for match in MARK_PATTERN.finditer(text):
            ids.extend(encode(text[last:match.start()], last == 0))
            ids.extend(self._by_hash[match.group(1)].expansion)
            last = match.end()
        ids.extend(encode(text[last:], last == 0))
        return ids

    # ------------------------------------------------------------ the step

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        """[1, N] ids (some of them pictures') -> [1, N, hidden] embeddings for the model's inputs_embeds."""
        table = self.model.get_input_embeddings()
        is_picture = input_ids >= self.base
        embeds = table(torch.where(is_picture, torch.zeros_like(input_ids), input_ids))
        positions = is_picture[0].nonzero().flatten().tolist()
        if positions:
            ids = input_ids[0, positions].tolist()
            rows = torch.stack([self._feature_row(int(i)) for i in ids]).to(embeds.dtype)
            embeds[0, positions] = rows
        return embeds

    def _feature_row(self, token: int) -> torch.Tensor:
        picture = self.picture_of(token)
        if picture.features is None:
            picture.features = self._features(picture)
        return picture.features[token - picture.first_id]

    def picture_of(self, token: int) -> Picture:
        for first, picture in reversed(self._by_id):
            if first <= token < first + picture.count:
                return picture
        raise RunnerError(f"id {token} belongs to no picture this model has read")

    def _features(self, picture: Picture) -> torch.Tensor:
        dtype = self.model.dtype
        inputs = {k: v.to(self.device, dtype=dtype) if v.is_floating_point() else v.to(self.device)
                  for k, v in picture.inputs.items()}
        out = self.model.get_image_features(**inputs)
        features = getattr(out, "pooler_output", out)
        if isinstance(features, (list, tuple)):
            features = torch.cat([f.reshape(-1, f.shape[-1]) for f in features])
        features = features.reshape(-1, features.shape[-1])
        if features.shape[0] != picture.count:
            raise RunnerError(f"the vision tower gave {features.shape[0]} image embeddings for {picture.count} "
                              "image tokens; this model's processor and weights do not match")
        picture.inputs = {}  # the pixels are not needed again
        return features
