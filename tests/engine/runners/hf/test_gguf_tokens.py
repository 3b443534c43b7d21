"""A GGUF's special tokens through transformers' conversion (`gguf_file=`), as the transformers runner reads them.

transformers (5.x) respells a byte-level vocabulary into the byte alphabet and skips the control and
user-defined tokens whose text is not in it: DeepSeek's `<｜User｜>` came out as BPE pieces and its BOS
as a new id past the vocabulary (issue 42). A small byte-level vocabulary with such markers (control and
user-defined, ASCII and not, the BOS among them) is read the runner's way and checked token by token
against llama.cpp reading the same file. The DeepSeek-R1 distill's own vocabulary is checked in
tests/families/test_hf_gguf_tokens.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.families.vocab import CONTROL, USER_DEFINED, from_ranks

pytest.importorskip("transformers")

MERGED = (b"he", b"ll", b"hell", b"hello", b" w", b"or", b" wor", b"ld", b" world")
ADDED = {300: ("<｜begin▁of▁sentence｜>", CONTROL), 301: ("<｜User｜>", CONTROL), 302: ("<｜Assistant｜>", CONTROL),
         303: ("<|end|>", CONTROL), 304: ("<✓>", USER_DEFINED), 305: ("<think>", USER_DEFINED)}
BOS, EOS, SIZE = 300, 303, 306
TEMPLATE = ("{{ bos_token }}{% for m in messages %}{% if m.role == 'user' %}<｜User｜>{{ m.content }}"
            "{% else %}<｜Assistant｜>{{ m.content }}<|end|>{% endif %}{% endfor %}"
            "{% if add_generation_prompt %}<｜Assistant｜><think>\n{% endif %}")
TEXT = "<｜begin▁of▁sentence｜><｜User｜>hello world<✓><｜Assistant｜>hello<|end|><｜User｜>hello <✓>world<｜Assistant｜><think>\n"


@pytest.fixture(scope="module")
def gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.families.build import write_model
    from tests.families.recipes import Family

    ranked = [bytes([byte]) for byte in range(256)] + list(MERGED)
    vocabulary = from_ranks(ranked, {}, 0, SIZE, "qwen2").with_added(ADDED, **{
        "tokenizer.ggml.bos_token_id": BOS, "tokenizer.ggml.eos_token_id": EOS, "tokenizer.ggml.add_bos_token": True})
    family = Family("tiny", "Tiny markers", "", lambda: vocabulary, ())
    return write_model(tmp_path_factory.mktemp("gguf") / "tiny-markers.gguf", family, vocabulary, TEMPLATE)


@pytest.fixture(scope="module")
def tokenizer(gguf: Path) -> Any:
    from engine.runners.hf.load import Source, load_tokenizer

    return load_tokenizer(Source(gguf.parent, gguf.name, gguf.stem))


@pytest.fixture(scope="module")
def llamacpp(gguf: Path) -> Iterator[int]:
    """llama.cpp's vocabulary of the same file, loaded alone."""
    import llama_cpp

    from engine.runners.llamacpp.load import llama_log

    llama_log()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(gguf).encode(), params)
    assert model
    yield llama_cpp.llama_model_get_vocab(model)
    llama_cpp.llama_model_free(model)


def test_every_marker_is_one_token_at_the_files_id(tokenizer: Any) -> None:
    for token_id, (text, kind) in ADDED.items():
        assert tokenizer.encode(text, add_special_tokens=False) == [token_id], text
        assert tokenizer.added_tokens_decoder[token_id].special == (kind == CONTROL), text
    assert (tokenizer.bos_token_id, tokenizer.eos_token_id) == (BOS, EOS)
    assert len(tokenizer) == SIZE, "no token past the file's vocabulary"


def test_a_prompt_is_the_tokens_llamacpp_makes_of_it(tokenizer: Any, llamacpp: int) -> None:
    from engine.chat_template import render_chat
    from engine.protocol import ChatMessage
    from engine.runners.hf.text import chat_template, encode_prompt, tokenizer_adds_bos
    from engine.runners.llamacpp.vocabulary import tokenize

    history = (ChatMessage("user", "hello world<✓>"), ChatMessage("assistant", "hello"),
               ChatMessage("user", "hello <✓>world"))
    text = render_chat(chat_template(tokenizer), history, tokenizer.bos_token, tokenizer.eos_token)
    assert text == TEXT
    ids = encode_prompt(tokenizer, text, tokenizer_adds_bos(tokenizer))
    assert ids == tokenize(llamacpp, text)
    assert ids[:2] == [BOS, 301] and ids.count(302) == 2 and ids.count(304) == 2
    assert tokenizer.decode(ids) == text


def test_ordinary_text_is_still_the_files_bpe(tokenizer: Any, llamacpp: int) -> None:
    from engine.runners.llamacpp.vocabulary import tokenize

    for text in ("hello world", "held low", "ñ and ｜ as text"):
        assert tokenizer.encode(text, add_special_tokens=False) == tokenize(llamacpp, text), text


def test_the_quantization_checks_reading_has_the_markers_at_the_files_ids(gguf: Path) -> None:
    from engine.quantcheck.hf import read_vocabulary

    vocabulary = read_vocabulary(str(gguf))
    assert len(vocabulary.tokens) == SIZE and dict(vocabulary.special)["bos"] == BOS
    assert [vocabulary.tokens[i].decode() for i in ADDED] == [text for text, _ in ADDED.values()]
