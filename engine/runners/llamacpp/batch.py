"""llama.cpp's batch: a step's work of every slot into it, and freeing what a context owns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import llama_cpp

from engine.runners.base import RunnerError, SlotWork


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


def fill_batch(batch: llama_cpp.llama_batch, capacity: int, work: Sequence[SlotWork], has_sampler: Callable[[int], bool],
               record: Callable[[SlotWork], None], positions: dict[int, int] | None = None,
               known: Callable[[SlotWork], bool] = lambda item: False) -> list[tuple[SlotWork, range]]:
    """Every slot's tokens (drafts included) into the one batch, each item `record`ed first; the batch
    rows where each sampling item samples: after its last token, and after each draft token. Each wants
    logits, but where `known(item)` says its draft's samples are known without them (forced tokens:
    rows.SampledRows.known): there only the last row, the one free sample, has logits. The model's output layer
    then runs for that row alone (llama.cpp picks the rows before it).
    `positions`: where each slot's first token goes in its sequence, where that is not its start_pos
    (after a picture whose rows take fewer positions than rows: pictures.py)."""
    total = sum(len(w.tokens) + len(w.draft) for w in work)
    if total > capacity:
        raise RunnerError(f"A step of {total} tokens is larger than the batch of {capacity}.")
    wants_logits = cast(Any, batch.logits)
    outputs: list[tuple[SlotWork, range]] = []
    index = 0
    for item in work:
        if item.sample and not has_sampler(item.slot):
            raise RunnerError(f"Slot {item.slot} has no sampler: begin_turn was not called.")
        if item.draft and not (item.sample and item.tokens):
            raise RunnerError(f"Slot {item.slot}: a draft needs a token before it and a sample after it.")
        fed = item.fed
        record(item)
        start = positions[item.slot] if positions is not None else item.start_pos
        index = put_tokens(batch, index, fed, start, item.slot)
        if item.sample and item.tokens:
            first = index - 1 - (len(fed) - len(item.tokens))
            for row in range(index - 1 if item.draft and known(item) else first, index):
                wants_logits[row] = 1
            outputs.append((item, range(first, index)))
    batch.n_tokens = index
    return outputs


def free_handles(batch: llama_cpp.llama_batch | None, context: int | None, model: int | None) -> None:
    """Batch, context and model, in that order (a context must go before its model)."""
    if batch is not None:
        llama_cpp.llama_batch_free(batch)
    if context:
        llama_cpp.llama_free(context)
    if model:
        llama_cpp.llama_model_free(model)
