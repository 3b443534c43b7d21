"""Comparing a quantized model with its reference before trusting it (`python -m engine.quantcheck`).

Token-level agreement on a reference text (KLD, same top token, perplexity, as
llama-perplexity defines them), answers to a set of questions (the same? JSON
still valid? hard questions still right?), the cost (size, speed, memory),
and a verdict in plain words. Qt-free: the window's dialog runs `run_check`
on a worker thread.
"""
