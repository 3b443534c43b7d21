"""llama.cpp's batch: one sequence's run of tokens into it, and freeing what a context owns."""

from __future__ import annotations

from typing import Any, cast

import llama_cpp


def put_tokens(batch: llama_cpp.llama_batch, index: int, tokens: list[int], start: int, seq: int) -> int:
    """`tokens` at positions start.. of sequence `seq` from batch row `index` on, no logits wanted;
    returns the next free row."""
    # Plain locals: faster in this hot loop, and the stubs mistype pos and seq_id.
    token_of, pos_of, count_of = cast(Any, batch.token), cast(Any, batch.pos), cast(Any, batch.n_seq_id)
    seq_of, wants_logits = cast(Any, batch.seq_id), cast(Any, batch.logits)
    for offset, token in enumerate(tokens):
        token_of[index] = token
        pos_of[index] = start + offset
        count_of[index] = 1
        seq_of[index][0] = seq
        wants_logits[index] = 0
        index += 1
    return index


def free_handles(batch: llama_cpp.llama_batch | None, context: int | None, model: int | None) -> None:
    """Batch, context and model, in that order (a context must go before its model)."""
    if batch is not None:
        llama_cpp.llama_batch_free(batch)
    if context:
        llama_cpp.llama_free(context)
    if model:
        llama_cpp.llama_model_free(model)
