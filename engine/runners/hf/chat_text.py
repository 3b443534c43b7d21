"""The transformers runner's text side: the chat template, the tokenizer both ways, the end-of-generation
ids and the output format, and a vision model's pictures (markers in the text, then their own token ids).

What changes here is the prompt's form (a template, a tokenizer's quirks, a picture kind's tokens); the
step (runner.py) sees only token ids and the pictures' rows (vision.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.chat_template import end_markers, render_chat
from engine.detokenizer import OffsetDetokenizer
from engine.images import MARK_START
from engine.protocol import ChatMessage, ToolSpec
from engine.runners.hf.load import Loaded
from engine.runners.hf.text import (
    chat_template,
    encode_prompt,
    end_of_generation_ids,
    hidden_special_ids,
    output_format,
    single_token_ids,
    tokenizer_adds_bos,
)
from engine.runners.hf.vision import Pictures
from engine.runners.hf.vision_kinds import VisionKind, vision_kind


def picture_kind(loaded: Loaded) -> VisionKind | None:
    """The vision kind of a model loaded with its processor (None: it reads text only)."""
    return vision_kind(loaded.model.config.model_type) if loaded.processor is not None else None


class ChatText:
    """Messages to prompt text to token ids, and generated ids back to text, for one loaded model."""

    def __init__(self, loaded: Loaded, logits_width: int) -> None:
        model, tokenizer = loaded.model, loaded.tokenizer
        self.tokenizer = tokenizer
        self.end_markers = end_markers(chat_template(tokenizer))
        self.eog = end_of_generation_ids(model, tokenizer) | single_token_ids(tokenizer, self.end_markers)
        self.bos_wanted = tokenizer_adds_bos(tokenizer)
        self.output_format = output_format(tokenizer)
        self._hidden_ids = hidden_special_ids(tokenizer, self.output_format.marker_texts)
        self.pictures: Pictures | None = None
        self.capabilities = self.output_format.capabilities
        kind = picture_kind(loaded)
        if kind is not None:
            table_rows = int(model.get_input_embeddings().weight.shape[0])
            self.pictures = Pictures(model, loaded.processor, loaded.device,
                                     base=max(logits_width, table_rows, len(tokenizer)), kind=kind)
            self.capabilities = (*self.capabilities, "vision")

    def render_chat(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = (),
                    options: Sequence[tuple[str, str]] = ()) -> str:
        if self.pictures is not None:  # each picture becomes a marker that tokenize() expands
            messages = self.pictures.render(messages)
        return render_chat(chat_template(self.tokenizer), messages, self.tokenizer.bos_token or "",
                           self.tokenizer.eos_token or "", tools, options)

    def tokenize(self, text: str) -> list[int]:
        if self.pictures is not None and MARK_START in text:
            return self.pictures.tokenize(
                text, lambda piece, first: encode_prompt(self.tokenizer, piece, self.bos_wanted and first))
        return encode_prompt(self.tokenizer, text, self.bos_wanted)

    def encode(self, text: str) -> list[int]:
        """Plain text's ids, no picture markers read (what an embedding is made of)."""
        return encode_prompt(self.tokenizer, text, self.bos_wanted)

    def detokenizer(self) -> OffsetDetokenizer:
        # Special tokens render as nothing, but the markers the parser reads (<think>, <tool_call> ...).
        hidden = self._hidden_ids
        return OffsetDetokenizer(lambda ids: self.tokenizer.decode([i for i in ids if i not in hidden]))

    def picture_tokens(self, width: int, height: int) -> int:
        """The prompt tokens a picture of this size takes, as the model's processor counts them (0: cannot see)."""
        return self.pictures.tokens_for(width, height) if self.pictures is not None else 0
