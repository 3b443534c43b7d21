"""A family fixture's vocabulary as llama.cpp loads it alone (vocab_only), with what the runner derives
from it: the output format, the special tokens, llguidance's view. For token-level tests without a model."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import llama_cpp

from engine.parsing.detect import detect_format
from engine.parsing.formats import OutputFormat
from engine.runners.llamacpp.info import chat_template
from engine.runners.llamacpp.load import llama_log
from engine.runners.llamacpp.rows import llguidance_tokenizer
from engine.runners.llamacpp.tokenize_cache import TokenizeFunction
from engine.runners.llamacpp.vocabulary import special_id, tokenize
from tests.families.build import family_model


@dataclass
class FamilyVocabulary:
    name: str
    model: int  # a vocab_only llama_model: kept for the session
    vocab: int
    n_vocab: int
    template: str
    output: OutputFormat

    def tokens(self, text: str) -> list[int]:
        return tokenize(self.vocab, text)

    def id_of(self, marker: str) -> int:
        ids = self.tokens(marker)
        assert len(ids) == 1, f"{marker!r} is {len(ids)} tokens in {self.name}'s vocabulary"
        return ids[0]

    def is_end(self, token: int) -> bool:
        return bool(llama_cpp.llama_vocab_is_eog(self.vocab, token))

    @functools.cached_property
    def tokenize_function(self) -> TokenizeFunction:
        return TokenizeFunction(self.vocab)

    @functools.cached_property
    def llguidance(self) -> Any:
        return llguidance_tokenizer(self.vocab, self.n_vocab, self.is_end, self.tokenize_function)


@functools.cache
def family_vocabulary(name: str) -> FamilyVocabulary:
    llama_log()  # llama.cpp's log into the ring buffer, not the test's output
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(family_model(name)).encode(), params)
    assert model, f"llama.cpp could not read the {name} fixture's vocabulary"
    vocab = llama_cpp.llama_model_get_vocab(model)
    template = chat_template(model) or ""

    def text_of(token: int) -> str:
        return llama_cpp.llama_vocab_get_text(vocab, token).decode() if token >= 0 else ""

    output = detect_format(template, lambda text: len(tokenize(vocab, text)) == 1,
                           text_of(llama_cpp.llama_vocab_bos(vocab)), text_of(llama_cpp.llama_vocab_eos(vocab)),
                           lambda text: special_id(vocab, text))
    return FamilyVocabulary(name, model, vocab, llama_cpp.llama_vocab_n_tokens(vocab), template, output)
