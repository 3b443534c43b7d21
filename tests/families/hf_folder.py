"""A family's fixture as a transformers folder: the family's real tokenizer and template beside a tiny
random-weight Llama, made once per machine and kept beside the family's GGUF.

The tokenizer is what transformers itself makes of the family's fixture GGUF (`gguf_file=`: its
vocabulary, merges, added tokens and template), with the special tokens it garbles put back as the
runner puts them back, converted once (~30 s for Qwen's 152k tokens, more on a busy machine) and saved
as tokenizer.json, so later runs load it in a few seconds. The weights are not the GGUF's: loading those
through `gguf_file=` took about 100 s; these are written in code from a fixed seed, two layers of width
64, wide enough an init for clear greedy margins.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.families.build import CONTEXT, family_model

HF_BUILD_VERSION = 1  # bump when what is written changes: the kept folders are then made again
HF_FAMILIES = ("gpt_oss", "llama3_1", "qwen3", "r1_distill")  # the families the suite runs through transformers (prepare.py makes them)


def family_hf_folder(name: str) -> Path:
    """The transformers folder of family `name` (made here the first time)."""
    gguf = family_model(name)
    target = gguf.with_name(f"{gguf.stem}-hf{HF_BUILD_VERSION}")
    if not target.is_dir():
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        write_folder(partial, gguf)
        try:
            partial.rename(target)  # whole or not at all
        except OSError:  # another test process made it first (make test runs two)
            shutil.rmtree(partial, ignore_errors=True)
            if not target.is_dir():
                raise
    return target


def write_folder(target: Path, gguf: Path, seed: int = 0) -> Path:
    import torch
    from transformers import AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

    from engine.runners.hf.gguf_tokens import repair_gguf_tokens

    # as the runner reads a GGUF: the markers transformers' conversion garbles put back at the file's ids
    tokenizer = repair_gguf_tokens(AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name), gguf)
    assert tokenizer.chat_template, f"{gguf.name}: transformers found no chat template"
    eos = tokenizer.eos_token_id
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=CONTEXT,
                         initializer_range=0.2, bos_token_id=tokenizer.bos_token_id, eos_token_id=eos,
                         pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    model.generation_config = GenerationConfig(bos_token_id=config.bos_token_id, eos_token_id=[eos],
                                               pad_token_id=config.pad_token_id)
    target.mkdir(parents=True)
    tokenizer.save_pretrained(target)
    model.save_pretrained(target, safe_serialization=True)
    return target
