"""The loaded model's text side: its chat template and markers, token pieces, and the end of generation.

Control tokens render as nothing (<|im_end|> is not answer text), except the markers the output
parser reads (reasoning and tool-call markers), which it must see. A marker the template ends an
answer with counts as the end of generation where it is one token, as the vocabulary's own EOG
tokens do.
"""

from __future__ import annotations

import ctypes

import llama_cpp

from engine.chat_template import end_markers
from engine.parsing.detect import detect_format
from engine.runners.llamacpp.info import chat_template
from engine.runners.llamacpp.vocabulary import special_id, tokenize


class ModelText:
    """What the runner needs of the vocabulary and template to turn text into tokens and back."""

    def __init__(self, model: int) -> None:
        self.vocab = llama_cpp.llama_model_get_vocab(model)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)
        self.template = chat_template(model)
        self._pieces: dict[int, bytes] = {}
        self.bos_text = self.token_text(llama_cpp.llama_vocab_bos(self.vocab))
        self.eos_text = self.token_text(llama_cpp.llama_vocab_eos(self.vocab))
        self._adds_bos = bool(llama_cpp.llama_vocab_get_add_bos(self.vocab))
        self.end_markers = end_markers(self.template)
        self._marker_tokens = {ids[0] for ids in map(self.tokens, self.end_markers) if len(ids) == 1}
        self.output_format = detect_format(self.template, lambda text: len(self.tokens(text)) == 1,
                                           self.bos_text, self.eos_text,
                                           lambda text: special_id(self.vocab, text))
        # The markers the parser reads are shown even where they are control tokens; other control tokens not.
        self._shown_controls = {self.tokens(text)[0] for text in self.output_format.marker_texts}

    def tokens(self, text: str, add_special: bool = False) -> list[int]:
        return tokenize(self.vocab, text, add_special)

    def adds_bos(self, text: str) -> bool:
        """Whether tokenizing `text` should add the BOS: a template that writes the BOS text itself must
        not get a second one."""
        writes_bos = bool(self.bos_text) and text.startswith(self.bos_text)
        return not (self._adds_bos and writes_bos)

    def piece(self, token: int) -> bytes:
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._pieces[token] = self._token_to_piece(token)
        return piece

    def _token_to_piece(self, token: int) -> bytes:
        buffer = ctypes.create_string_buffer(64)
        # special=False: control tokens (<|im_end|> ...) render as nothing, but the markers the parser reads.
        special = token in self._shown_controls
        length = llama_cpp.llama_token_to_piece(self.vocab, token, buffer, len(buffer), 0, special)
        if length < 0:
            buffer = ctypes.create_string_buffer(-length)
            length = llama_cpp.llama_token_to_piece(self.vocab, token, buffer, len(buffer), 0, special)
        return buffer.raw[: max(length, 0)]

    def token_text(self, token: int) -> str:
        if token < 0:
            return ""
        value = llama_cpp.llama_vocab_get_text(self.vocab, token)
        return value.decode("utf-8", errors="replace") if value else ""

    def is_end_of_generation(self, token: int) -> bool:
        return bool(llama_cpp.llama_vocab_is_eog(self.vocab, token)) or token in self._marker_tokens
