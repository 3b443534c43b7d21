"""Embeddings from a transformers model (the mean of the last layer's hidden states over the text's tokens),
and a text's log-probabilities under it.

One forward pass per text, without the chats' cache (use_cache off), so no
chat's slot is touched; vectors at unit length, as the llama.cpp runner's.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from engine.runners.base import RunnerError
from engine.runners.vectors import unit_length


def embed(model: Any, device: torch.device, tokens: Sequence[int], max_tokens: int) -> list[float]:
    if not tokens:
        raise RunnerError("An empty text has no embedding.")
    if len(tokens) > max_tokens:
        raise RunnerError(f"A text of {len(tokens)} tokens is longer than the {max_tokens} an embedding takes here.")
    ids = torch.tensor([list(tokens)], device=device)
    with torch.inference_mode():
        output = model(input_ids=ids, use_cache=False, output_hidden_states=True)
    last = output.hidden_states[-1][0].float()
    return unit_length(last.mean(dim=0).cpu().numpy())


def token_logprobs(model: Any, device: torch.device, tokens: Sequence[int]) -> list[float]:
    """log p(token_i | tokens before it) for i >= 1, in one pass without the chats' cache: perplexity checks."""
    ids = torch.tensor([list(tokens)], dtype=torch.long, device=device)
    with torch.inference_mode():
        logits = model(input_ids=ids, use_cache=False).logits[0, :-1].float()
    picked = torch.log_softmax(logits, dim=-1).gather(1, ids[0, 1:, None])
    return [float(x) for x in picked[:, 0].tolist()]
