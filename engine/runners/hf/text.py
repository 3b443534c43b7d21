"""The tokenizer side of a transformers model: its template, its prompt ids, where its answers end.

Apart from the runner so that the benchmark's baselines (engine/bench/hf_baseline.py)
build the very prompts the runner builds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.parsing.detect import detect_format
from engine.parsing.formats import OutputFormat


def end_of_generation_ids(model: Any, tokenizer: Any) -> set[int]:
    """Every eos id the generation config, the model config and the tokenizer name."""
    ids: set[int] = set()
    sources = (getattr(model, "generation_config", None), model.config.get_text_config(), tokenizer)
    for source in sources:
        value = getattr(source, "eos_token_id", None)
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(int(v) for v in value)
    return ids


def single_token_ids(tokenizer: Any, texts: Sequence[str]) -> set[int]:
    """Ids of the texts that are one token of the vocabulary (an end marker a model may emit as such)."""
    encoded = [tokenizer.encode(text, add_special_tokens=False) for text in texts]
    return {int(ids[0]) for ids in encoded if len(ids) == 1}


def encode_prompt(tokenizer: Any, text: str, bos_wanted: bool) -> list[int]:
    """Token ids of a rendered prompt. Templates often write the BOS text
    themselves; add BOS only when the tokenizer wants one and it is missing."""
    ids = list(tokenizer.encode(text, add_special_tokens=False))
    bos = tokenizer.bos_token_id
    if bos_wanted and bos is not None and (not ids or ids[0] != bos):
        ids.insert(0, bos)
    return ids


def tokenizer_adds_bos(tokenizer: Any) -> bool:
    """Whether the tokenizer itself puts BOS before a text (asked, not read from its config)."""
    bos = tokenizer.bos_token_id
    if bos is None:
        return False
    try:
        probe = tokenizer.encode("a", add_special_tokens=True)
    except Exception:  # noqa: BLE001 - a tokenizer that cannot say wants none
        return False
    return bool(probe) and probe[0] == bos


def chat_template(tokenizer: Any) -> str | None:
    """The tokenizer's template; None when the model has none (the fallback then applies)."""
    template = tokenizer.chat_template
    if isinstance(template, dict):  # named templates: the default one, else the first
        template = template.get("default") or next(iter(template.values()), None)
    return template


def output_format(tokenizer: Any) -> OutputFormat:
    """The markers the model writes, found from its template and vocabulary, with the special tokens
    among them that a grammar names by id."""
    return detect_format(chat_template(tokenizer), lambda text: len(tokenizer.encode(text, add_special_tokens=False)) == 1,
                         tokenizer.bos_token or "", tokenizer.eos_token or "", lambda text: special_token_id(tokenizer, text))


def special_token_id(tokenizer: Any, text: str) -> int | None:
    """The id of `text` where it is one added token that llguidance keeps out of text (a grammar must
    name it by id, else it could only be spelled in pieces), else None."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    if len(ids) != 1:
        return None
    added = getattr(tokenizer, "added_tokens_decoder", {}).get(int(ids[0]))
    return int(ids[0]) if added is not None and is_grammar_special(added) else None


def is_grammar_special(added: Any) -> bool:
    """Whether llguidance's view of a transformers vocabulary (llguidance.hf) makes an added token special:
    those marked special, and the others written like markers. Qwen's `<tool_call>` and `<think>` are
    added tokens marked not special, yet llguidance keeps them out of text; named as quoted text, the
    grammar could never be matched past them. The llama.cpp runner's rule is the same (llamacpp/rows.py)."""
    content = str(getattr(added, "content", ""))
    return bool(getattr(added, "special", False)) or (content.startswith("<") and content.endswith(">"))


def hidden_special_ids(tokenizer: Any, shown: Sequence[str]) -> set[int]:
    """The special tokens a decoded answer leaves out: all of them but the markers the output parser reads."""
    shown_ids = single_token_ids(tokenizer, shown)
    added = getattr(tokenizer, "added_tokens_decoder", {})  # what decode(skip_special_tokens=True) leaves out
    special = {int(i) for i, token in added.items() if getattr(token, "special", False)}
    return (special | {int(i) for i in tokenizer.all_special_ids}) - shown_ids
