"""The DeepSeek-R1 distill's GGUF read through transformers (`gguf_file=`) the way the transformers runner reads
it: the prompt is the tokens llama.cpp makes of it, and its markers are single tokens at the GGUF's ids.

transformers' conversion (5.x) garbles the special tokens that are not ASCII: `<｜User｜>` (fullwidth bars)
came out as BPE pieces and `<｜begin▁of▁sentence｜>` as a new token past the vocabulary (issue 42);
engine/runners/hf/gguf_tokens.py puts them back. The tokenizer alone is checked here (converting the
152k-token vocabulary takes ~20-30 s); the runner's turns on the other families are in test_hf_runner.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.parsing.prompt import prepare_turn
from engine.protocol import ChatMessage, Submit, ToolCall
from tests.families.build import family_model
from tests.families.recipes import FAMILIES
from tests.families.test_hf_runner import ADD, ASK
from tests.families.vocab import CONTROL, USER_DEFINED
from tests.families.vocab_view import family_vocabulary

pytestmark = pytest.mark.slow
NAME = "r1_distill"
MARKERS = ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<think>", "</think>")
# the template's call and result markers: text in the distill's Qwen vocabulary, so many tokens on both sides
SPELLED = ("<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁outputs▁begin｜>")
HISTORY = (*ASK, ChatMessage("assistant", "", tool_calls=(ToolCall("c1", "add_small", '{"a": 2, "b": 3}'),)),
           ChatMessage("tool", "5", tool_call_id="c1", name="add_small"), ChatMessage("assistant", "It is 5."),
           ChatMessage("user", "And 4 and 4?"))


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    pytest.importorskip("transformers")
    from engine.runners.hf.load import Source, load_tokenizer

    gguf = family_model(NAME)
    return load_tokenizer(Source(gguf.parent, gguf.name, gguf.stem))


def test_the_prompt_with_a_call_and_its_result_is_the_tokens_llamacpp_makes_of_it(tokenizer: Any) -> None:
    from engine.chat_template import render_chat
    from engine.runners.hf.text import chat_template, encode_prompt, output_format, tokenizer_adds_bos

    llamacpp = family_vocabulary(NAME)

    def render(messages, tools, options):  # type: ignore[no-untyped-def]  # what the runner's ChatText renders
        return render_chat(chat_template(tokenizer), messages, tokenizer.bos_token, tokenizer.eos_token, tools, options)

    hf_format = output_format(tokenizer)
    text, setup = prepare_turn(render, hf_format, Submit("a", HISTORY, tools=(ADD,)))
    assert "<｜tool▁outputs▁begin｜>" in text and "add_small" in text and "<｜Assistant｜><think>\n" in text
    ids = encode_prompt(tokenizer, text, tokenizer_adds_bos(tokenizer))
    assert ids == llamacpp.tokens(text)
    assert ids.count(llamacpp.id_of("<｜User｜>")) == 2 and ids[0] == llamacpp.id_of("<｜begin▁of▁sentence｜>")
    assert tokenizer.decode(ids) == text
    assert dict(hf_format.special_tokens) == dict(llamacpp.output.special_tokens)
    assert setup.tools == llamacpp.output.tools and hf_format.reasoning == llamacpp.output.reasoning


def test_the_markers_are_single_tokens_at_the_ggufs_ids(tokenizer: Any) -> None:
    llamacpp = family_vocabulary(NAME)
    for marker in MARKERS:
        assert tokenizer.encode(marker, add_special_tokens=False) == [llamacpp.id_of(marker)], marker
    for marker in SPELLED:
        assert tokenizer.encode(marker, add_special_tokens=False) == llamacpp.tokens(marker), marker
    assert (tokenizer.bos_token_id, tokenizer.eos_token_id) == (llamacpp.id_of(MARKERS[0]), llamacpp.id_of(MARKERS[1]))
    assert len(tokenizer) == llamacpp.n_vocab, "no token past the model's vocabulary"


def test_every_control_and_user_defined_token_is_where_the_gguf_has_it(tokenizer: Any) -> None:
    vocabulary = FAMILIES[NAME].vocabulary()
    added = tokenizer.added_tokens_decoder
    for token_id, (text, kind) in enumerate(zip(vocabulary.tokens, vocabulary.types)):
        if kind in (CONTROL, USER_DEFINED):
            assert added[token_id].content == text and added[token_id].special == (kind == CONTROL), text
